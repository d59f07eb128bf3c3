package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveCommand runs "brain serve args..." as a process of its own, with
// the test's environment and env added, and answers its URL once it
// serves; it is sent SIGTERM, and must drain, when the test ends.
func serveCommand(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd, stderr, urls, done := startCommand(t, env, append([]string{"serve"}, args...)...)
	select {
	case url := <-urls:
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := <-done; err != nil {
				t.Errorf("brain serve after SIGTERM: %v\n%s", err, stderr.String())
			}
		})
		return url
	case err := <-done:
		t.Fatalf("brain serve exited before serving: %v\n%s", err, stderr.String())
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("brain serve did not start\n%s", stderr.String())
	}
	return ""
}

// TestServeWorkspaceFitsLoweredAnswerBound: with Brain's environment
// answer bound lowered, the built-in workspace environment cuts a read of
// a larger file to fit it (truncated), and the tool call succeeds, rather
// than answering more than Brain takes and failing the call.
func TestServeWorkspaceFitsLoweredAnswerBound(t *testing.T) {
	const bound = 4096
	base := serveCommand(t, []string{"BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES=4096"},
		"--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth", "--log-level", "error")
	create := `{"model":{"provider":"scripted","name":"demo"},
	 "environments":[{"name":"ws","driver":"workspace"}],
	 "tools":[
	  {"name":"sh","description":"run a shell line","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
	   "placements":{"ws":{"implementation":{"tool":"command"}}}},
	  {"name":"read","description":"read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
	   "placements":{"ws":{"implementation":{"tool":"read"}}}}]}`
	status, body := request(t, "POST", base+"/v1/sessions", "application/json", "create", []byte(create))
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(body, &sum); status != 200 || sum.SessionID == "" {
		t.Fatalf("create = %d %s", status, body)
	}
	for _, m := range []struct{ key, script string }{
		{"write", `{"tool_calls":[{"name":"sh","input":{"shell":"head -c 20000 /dev/zero | tr '\\0' x > big.txt"}}]}`},
		{"read", `{"tool_calls":[{"name":"read","input":{"path":"big.txt"}}]}`},
	} {
		send, _ := json.Marshal(map[string]any{"input": map[string]string{"message": m.script}})
		if status, body := request(t, "POST", base+"/v1/sessions/"+sum.SessionID+"/messages", "application/json", m.key, send); status != 200 {
			t.Fatalf("send %s = %d %s", m.key, status, body)
		}
	}
	_, body = request(t, "GET", base+"/v1/sessions/"+sum.SessionID+"/transcript", "", "", nil)
	var tr struct {
		Messages []struct {
			Content []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		t.Fatalf("transcript %s: %v", body, err)
	}
	var results []json.RawMessage
	for _, m := range tr.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				if c.IsError {
					t.Errorf("tool result %d is an error: %.300s", len(results), c.Content)
				}
				results = append(results, c.Content)
			}
		}
	}
	if len(results) != 2 {
		t.Fatalf("transcript has %d tool results, want 2: %s", len(results), body)
	}
	var out struct {
		Content   string `json:"content"`
		Truncated bool   `json:"truncated"`
		Size      int64  `json:"size"`
	}
	if err := json.Unmarshal(results[1], &out); err != nil {
		t.Fatalf("read result %.300s: %v", results[1], err)
	}
	if !out.Truncated || out.Size != 20000 || out.Content == "" || len(out.Content) >= bound || strings.Trim(out.Content, "x") != "" {
		t.Errorf("read: %d bytes of content, truncated %v, size %d; want a truncated start of the file within %d bytes", len(out.Content), out.Truncated, out.Size, bound)
	}
}

// TestServeRefusesAnswerBoundBelowWorkspace: an environment answer bound
// below the least the built-in workspace environment answers within is a
// refused setting (exit 2) naming the flag, the variable and the least
// bound; with --no-workspace nothing needs it and Brain serves.
func TestServeRefusesAnswerBoundBelowWorkspace(t *testing.T) {
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--max-environment-response-bytes", "1023"}},
		{[]string{"BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES=1"}, nil},
	} {
		dataDir := t.TempDir() + "/data"
		args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-auth"}, c.args...)
		res := runCommand(t, c.env, args...)
		if res.served || res.code != 2 || !strings.Contains(res.stderr, "--max-environment-response-bytes") ||
			!strings.Contains(res.stderr, "BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES") || !strings.Contains(res.stderr, "1024") {
			t.Errorf("env %v args %v: served %v, exit %d, stderr %q; want exit 2 naming the setting and 1024", c.env, c.args, res.served, res.code, res.stderr)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("env %v args %v: the data directory was created (%v)", c.env, c.args, err)
		}
		res = runCommand(t, c.env, append(args, "--no-workspace")...)
		if !res.served || res.code != 0 {
			t.Errorf("env %v args %v --no-workspace: served %v, exit %d, stderr %q; want it served", c.env, c.args, res.served, res.code, res.stderr)
		}
	}
}
