package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
)

const brainToken = "wasmtool-example-token"

// TestToolOnBrain builds this program to Wasm, admits it into a Brain
// embedded in the test (brain.New) and has a session call it on the built-in brain
// environment with a workspace grant: the counts come back as the tool
// result, the .count file lands in the workspace, and the progress event
// has the tool as its origin.
func TestToolOnBrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module and runs a whole Brain over loopback")
	}
	module := agentlooptest.Build(t, ".")
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(docs, "poem.txt"), []byte("two roads\ndiverged in a wood\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := braintest.Start(t, braintest.Options{Token: brainToken, Edit: func(c *brain.Config) {
		c.Agentloops.FilesystemAllow = []string{docs}
	}}).URL
	n := 0
	do := func(method, p, ctype string, body []byte, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, url+p, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+brainToken)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		n++
		req.Header.Set("Idempotency-Key", fmt.Sprintf("wasmtool-%d-%d", time.Now().UnixNano(), n))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s = %d %s", method, p, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, p, b, err)
		}
	}
	var adm struct{ ID, Status string }
	do("POST", "/v1/tools", "application/octet-stream", module, &adm)
	if adm.Status != "admitted" {
		t.Fatalf("admission %+v", adm)
	}
	impl, _ := json.Marshal(map[string]any{"type": "brain_component", "entrypoint": "run", "id": adm.ID,
		"grants": map[string]any{"filesystem": map[string]any{"workspace": map[string]string{"path": docs, "access": "write"}}}})
	create, _ := json.Marshal(api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "demo"},
		Environments: []api.Environment{{Name: "brain", Driver: api.DriverBrain}},
		Tools: []api.Tool{{Name: "wc", Description: "count a file", InputSchema: json.RawMessage(`{"type":"object","required":["path"]}`),
			Placements: map[string]api.Placement{"brain": {Implementation: impl}}}},
	})
	var sum api.SessionSummary
	do("POST", "/v1/sessions", "application/json", create, &sum)
	// The scripted model calls the tool once, then answers.
	script, _ := json.Marshal(map[string]any{"tool_calls": []map[string]any{{"name": "wc", "input": map[string]string{"path": "poem.txt"}}}})
	msg, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: string(script)}})
	do("POST", "/v1/sessions/"+sum.SessionID+"/messages", "application/json", msg, &sum)

	var page api.EventPage
	do("GET", "/v1/sessions/"+sum.SessionID+"/events", "", nil, &page)
	var ended *api.ToolCallEnded
	var progress *api.Event
	for i, ev := range page.Events {
		switch ev.EventType {
		case api.KindToolCallEnded:
			ended = &api.ToolCallEnded{}
			_ = json.Unmarshal(ev.Data, ended)
		case "wc.counted":
			progress = &page.Events[i]
		}
	}
	if ended == nil || ended.Outcome.Status != api.OutcomeOK {
		t.Fatalf("tool call: %+v", ended)
	}
	var c Counts
	if err := json.Unmarshal(ended.Outcome.Value, &c); err != nil || c != (Counts{Lines: 2, Words: 6, Bytes: 29}) {
		t.Fatalf("counts %s: %v", ended.Outcome.Value, err)
	}
	if b, err := os.ReadFile(filepath.Join(docs, "poem.txt.count")); err != nil || !strings.Contains(string(b), `"words":6`) {
		t.Fatalf("count file %q: %v", b, err)
	}
	if progress == nil || progress.Origin == nil || progress.Origin.Kind != api.OriginTool {
		t.Fatalf("progress event %+v", progress)
	}
}
