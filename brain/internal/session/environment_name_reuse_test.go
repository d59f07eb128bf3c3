package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A declared environment's name stays its own for the session's life: once
// it is deleted, an instance of a template cannot take the name over, so
// that tools placed on it, grants naming it and the loop's environment
// never reach another provider under the old name.
func TestCreateInstanceUnderDeletedDeclaredName(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{}, map[string]string{"box": "echo", "tmpl": "echo"})
	req := toolSession("echo")
	req.Environments = append(req.Environments, api.Environment{Name: "tmpl", Driver: api.DriverHTTP, URL: "http://127.0.0.1:2",
		Credential: "tmpl-cred", Template: &api.EnvironmentTemplate{MaxInstances: 3}})
	id := h.create(req)
	box := &envapi.EnvironmentRef{Name: "box", Sequence: 1}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlDelete, Environment: box}); err != nil {
		t.Fatalf("delete box: %v", err)
	}
	setups := len(h.envs.opsOf(envapi.RequestSetup))
	_, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "box",
		Configuration: json.RawMessage(`{}`)})
	if Code(err) != api.CodeConflict {
		t.Fatalf("create of an instance named after the deleted declared environment box = %v, want a conflict", err)
	}
	if n := len(h.envs.opsOf(envapi.RequestSetup)); n != setups {
		t.Fatalf("refused create sent %d setups", n-setups)
	}
	// The tool placed on box still finds box deleted: nothing executes.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	if ops := h.envs.opsOf(envapi.RequestExecute); len(ops) != 0 {
		t.Fatalf("tool placed on box executed on %s (credential of %s)", ops[0].Authorized.URL, ops[0].Authorized.Name)
	}
}
