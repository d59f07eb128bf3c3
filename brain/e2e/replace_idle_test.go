package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// A method with effect "replace" waits for idle execution: a tool that
// the interrupt closed as cancelled still runs on the environment until
// its cancel is answered, and until then the replace is refused without
// anything being sent.
func TestReplaceWaitsForCancelledTool(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := &fixture{later: make(chan error, 16)}
	inner := envsdk.NewHandler(f, &envsdk.Options{Token: providerToken, StopGrace: 2 * time.Second})
	// Cancels wait for the gate "cancel" before the provider sees them.
	f.Provider = envtest.NewProvider(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var cmd envapi.Command
		if json.Unmarshal(body, &cmd) == nil && cmd.Operation.Request.Type == envapi.RequestCancel {
			select {
			case <-f.Gate("cancel"):
			case <-r.Context().Done():
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { f.OpenAll() })
	box := f.env("box", nil)
	box.Methods = map[string]api.EnvironmentMethod{
		"inspect": {Description: "resets the sandbox", Effect: "replace", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	id := c.create(api.CreateSessionRequest{Environments: []api.Environment{box}, Tools: []api.Tool{tool("bg", "box", "returned")}}).SessionID
	if status, body := c.send(id, toolCalls("bg")); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
	f.waitFor(envapi.RequestCancel, 1)

	reset := "/v1/sessions/" + id + "/environments/box/calls/inspect"
	if status, body := c.do(http.MethodPost, reset, map[string]any{"input": map[string]any{}}, nil); status != http.StatusConflict {
		t.Fatalf("replace while the cancelled tool's cancel is in flight: %d %s, want 409", status, body)
	}
	if n := len(f.received(envapi.RequestCall)); n != 0 {
		t.Fatalf("%d calls sent while the tool was being cancelled", n)
	}
	f.Open("cancel")
	c.waitEvent(id, ofType(api.KindToolCancelEnded))
	// Once the cancel is answered the replace runs: box is a new
	// incarnation and the old reference names nothing.
	c.must(http.StatusOK, http.MethodPost, reset, map[string]any{"input": map[string]any{}}, nil)
	c.must(http.StatusNotFound, http.MethodPost, "/v1/sessions/"+id+"/environments",
		map[string]any{"operation": "get", "environment": map[string]any{"name": "box", "sequence": 1}}, nil)
}
