package session

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An environment's name is unique within its session: creating an
// instance under the name of a declared environment, of its template, or
// of an instance already created is refused as a conflict, journals
// nothing and sends no setup.
func TestCreateInstanceNameTaken(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{}, map[string]string{"box": "echo", "tmpl": "echo", "i1": "echo"})
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{
		{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"},
		{Name: "tmpl", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1", Template: &api.EnvironmentTemplate{MaxInstances: 10}},
	}})
	create := func(name string) error {
		_, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: name})
		return err
	}
	if err := create("i1"); err != nil {
		t.Fatalf("create i1: %v", err)
	}
	list := func() string {
		raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlList})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	views := list()
	records := len(h.records(id))
	setups := len(h.envs.opsOf(envapi.RequestSetup))
	for _, name := range []string{"box", "tmpl", "i1"} {
		err := create(name)
		if !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict {
			t.Fatalf("create of an instance named %s = %v, want a conflict", name, err)
		}
	}
	if n := len(h.records(id)); n != records {
		t.Fatalf("refused creates journaled %d records: %v", n-records, kinds(h.records(id)[records:]))
	}
	if n := len(h.envs.opsOf(envapi.RequestSetup)); n != setups {
		t.Fatalf("refused creates sent %d setups", n-setups)
	}
	if got := list(); got != views {
		t.Fatalf("environments changed:\nbefore %s\nafter  %s", views, got)
	}
}
