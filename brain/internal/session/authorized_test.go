package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// The route an environment's operations take is the one its declaration
// was authorised with: an instance created with a configuration naming
// another route, or an update of the configuration, does not change the
// declaration delivered as Authorized.
func TestOperationsCarryTheAuthorizedDeclaration(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{}, map[string]string{"tmpl": "echo", "i1": "echo", "solo": "echo"})
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{
		{Name: "tmpl", Driver: "routed", Configuration: json.RawMessage(`{"driver":"a"}`), Template: &api.EnvironmentTemplate{MaxInstances: 3}},
		{Name: "solo", Driver: "routed", Configuration: json.RawMessage(`{"driver":"a"}`), Lifecycle: api.LifecycleManual},
	}})
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "i1",
		Configuration: json.RawMessage(`{"driver":"b"}`)}); err != nil {
		t.Fatalf("create instance: %v", err)
	}
	raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlList})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var solo envapi.EnvironmentRef
	for _, v := range decode[struct{ Environments []envapi.EnvironmentView }](t, raw).Environments {
		if v.Reference.Name == "solo" {
			solo = v.Reference
		}
	}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlUpdate, Environment: &solo,
		Configuration: json.RawMessage(`{"driver":"b"}`)}); err != nil {
		t.Fatalf("update solo: %v", err)
	}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: &solo}); err != nil {
		t.Fatalf("setup solo: %v", err)
	}
	seen := map[string]bool{}
	for _, op := range h.envs.opsOf(envapi.RequestSetup) {
		seen[op.Environment] = true
		want := "tmpl"
		if op.Environment == "solo" {
			want = "solo"
		}
		if op.Authorized.Name != want || string(op.Authorized.Configuration) != `{"driver":"a"}` || op.Authorized.Driver != "routed" {
			t.Errorf("%s setup: authorized %+v, want the declaration of %s with driver a", op.Environment, op.Authorized, want)
		}
	}
	if !seen["i1"] || !seen["solo"] {
		t.Fatalf("setups seen: %v", seen)
	}
}
