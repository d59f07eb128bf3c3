package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultWorkspace drives the workspace environment that "brain serve"
// runs by default: a scripted model calls a command tool and a read tool
// placed on it, and the transcript shows what they did.
func TestDefaultWorkspace(t *testing.T) {
	s := start(t, "")
	create := `{"model":{"provider":"scripted","name":"demo"},
	 "environments":[{"name":"ws","driver":"workspace"}],
	 "tools":[
	  {"name":"sh","description":"run a shell line","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
	   "placements":{"ws":{"implementation":{"tool":"command"}}}},
	  {"name":"read","description":"read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
	   "placements":{"ws":{"implementation":{"tool":"read"}}}}]}`
	r := s.do("POST", "/v1/sessions", create, "Idempotency-Key", "create")
	if r.Status != 200 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(r.Body, &sum)

	send := func(key, script string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"input": map[string]string{"message": script}})
		if r := s.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", string(body), "Idempotency-Key", key); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
	}
	send("m1", `{"tool_calls":[{"name":"sh","input":{"shell":"printf 'made by a tool' > note.txt; echo written"}}]}`)
	send("m2", `{"tool_calls":[{"name":"read","input":{"path":"note.txt"}}]}`)

	r = s.do("GET", "/v1/sessions/"+sum.SessionID+"/transcript", "")
	var tr struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &tr); err != nil {
		t.Fatalf("transcript %s: %v", r.Body, err)
	}
	var results []string
	for _, m := range tr.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" {
				if c.IsError {
					t.Errorf("tool result is an error: %s", c.Content)
				}
				results = append(results, string(c.Content))
			}
		}
	}
	if len(results) != 2 {
		t.Fatalf("transcript has %d tool results, want 2: %s", len(results), r.Body)
	}
	if !strings.Contains(results[0], `"stdout":"written\n"`) || !strings.Contains(results[0], `"exit_code":0`) {
		t.Errorf("command result = %s, want stdout written and exit code 0", results[0])
	}
	if !strings.Contains(results[1], `"content":"made by a tool"`) {
		t.Errorf("read result = %s, want the file the command wrote", results[1])
	}
	// The workspace lives under the data directory's native-workspaces.
	found := false
	filepath.WalkDir(filepath.Join(s.DataDir, "native-workspaces"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "note.txt" {
			found = true
		}
		return nil
	})
	if !found {
		t.Errorf("note.txt not found under %s", filepath.Join(s.DataDir, "native-workspaces"))
	}
}
