package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// TestAdmittedOverHTTP follows the package documentation against a Brain
// served on loopback: the module is admitted with POST /v1/agentloops
// (application/octet-stream), a session names it as
// {"type":"brain_component","entrypoint":"turn","id":...}, and each turn
// ends with the loop's result {"turn", "reply"}.
func TestAdmittedOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module and runs a whole Brain over loopback")
	}
	ctx, c, impl := admittedLoop(t)
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:     api.ModelConfig{Provider: "scripted", Name: "demo"},
		Agentloop: &api.Agentloop{Implementation: impl},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, msg := range []string{"hello", "again"} {
		if _, err := s.Send(ctx, api.UserInput{Message: msg}); err != nil {
			t.Fatalf("send %q: %v", msg, err)
		}
		var results []json.RawMessage
		for ev, err := range s.Events(ctx, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.EventType == api.KindTurnEnded {
				var te struct {
					Result json.RawMessage `json:"result"`
				}
				_ = json.Unmarshal(ev.Data, &te)
				results = append(results, te.Result)
			}
		}
		var r struct {
			Turn  int    `json:"turn"`
			Reply string `json:"reply"`
		}
		if len(results) != i+1 || json.Unmarshal(results[i], &r) != nil || r.Turn != i+1 || r.Reply != "echo: "+msg {
			t.Fatalf("turn results %s, want turn %d replying %q", results, i+1, "echo: "+msg)
		}
	}
}

// admittedLoop builds the example, serves a Brain on loopback, admits
// the module there, and answers the test's ctx, a client of that Brain
// (closed when the test ends) and the implementation naming the loop.
func admittedLoop(t *testing.T) (context.Context, *client.Client, json.RawMessage) {
	t.Helper()
	const token = "agentloop-example-token"
	module := agentlooptest.Build(t, ".")
	url := braintest.Start(t, braintest.Options{Token: token}).URL
	// Admission compiles the module, slow under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	id := admit(t, ctx, url, token, module)
	c, err := client.New(url, &client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	impl, _ := json.Marshal(map[string]string{"type": "brain_component", "entrypoint": "turn", "id": id})
	return ctx, c, impl
}

// admit posts the module to POST /v1/agentloops as the package
// documentation shows, and answers the id Brain admitted it as.
func admit(t *testing.T, ctx context.Context, url, token string, module []byte) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/agentloops", bytes.NewReader(module))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", "admit-loop-1")
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var adm struct{ ID, Status string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &adm) != nil || adm.Status != "admitted" {
		t.Fatalf("admission answered %d %s", resp.StatusCode, body)
	}
	return adm.ID
}
