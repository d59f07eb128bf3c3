package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeWorkspaceLogsNameEachKeyOnce: the log lines of the built-in
// workspace environment name the session's environment under
// "environment" (environment=ws), once: the provider's own label must not
// be a second "environment" key on the same line, which log processors
// read as one value or the other.
func TestServeWorkspaceLogsNameEachKeyOnce(t *testing.T) {
	cmd, stderr, urls, done := startCommand(t, nil, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth")
	var base string
	select {
	case base = <-urls:
	case err := <-done:
		t.Fatalf("brain serve exited before serving: %v\n%s", err, stderr.String())
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("brain serve did not start")
	}
	create := `{"model":{"provider":"scripted","name":"demo"},
	 "environments":[{"name":"ws","driver":"workspace"}],
	 "tools":[{"name":"sh","description":"run a shell line","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
	   "placements":{"ws":{"implementation":{"tool":"command"}}}}]}`
	status, body := request(t, "POST", base+"/v1/sessions", "application/json", "create", []byte(create))
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(body, &sum); status != 200 || sum.SessionID == "" {
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("create = %d %s", status, body)
	}
	send := `{"input":{"message":"{\"tool_calls\":[{\"name\":\"sh\",\"input\":{\"shell\":\"true\"}}]}"}}`
	if status, body := request(t, "POST", base+"/v1/sessions/"+sum.SessionID+"/messages", "application/json", "send", []byte(send)); status != 200 {
		t.Errorf("send = %d %s", status, body)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Errorf("brain serve after SIGTERM: %v", err)
	}
	operations := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		keys, values := logKeys(line)
		seen := map[string]bool{}
		for i, k := range keys {
			if seen[k] {
				t.Errorf("key %q twice in the log line %q", k, line)
			}
			seen[k] = true
			if k == "environment" && values[i] == "ws" && strings.Contains(line, "msg=operation") {
				operations++
			}
		}
	}
	if operations == 0 {
		t.Errorf("no operation line names environment=ws:\n%s", stderr.String())
	}
}

// logKeys answers the keys and values of a log line of slog's text
// handler, in order.
func logKeys(line string) (keys, values []string) {
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimLeft(line, " ") {
		k, rest, ok := strings.Cut(line, "=")
		if !ok {
			break
		}
		v := rest
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			line = rest[len(q):]
		} else {
			v, line, _ = strings.Cut(rest, " ")
		}
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values
}
