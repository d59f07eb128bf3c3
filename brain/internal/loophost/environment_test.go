package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// nextEnvs stands for the operator's environments: it routes the
// environments named in routes and records what it is sent.
type nextEnvs struct {
	routes map[string]bool
	mu     sync.Mutex
	got    []string
}

func (n *nextEnvs) note(op session.Operation) (envapi.Receipt, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, string(op.Request.Type)+" "+op.Environment)
	return envapi.Result(json.RawMessage(`"from next"`)), nil
}

func (n *nextEnvs) Deliver(_ context.Context, op session.Operation) (envapi.Receipt, error) {
	return n.note(op)
}

func (n *nextEnvs) ValidateEnvironment(env api.Environment) error {
	if n.routes[env.Name] {
		return nil
	}
	return errors.New("no route")
}

func op(env api.Environment, req envapi.Request) session.Operation {
	return session.Operation{Operation: envapi.Operation{SessionID: "ses_x", Environment: env.Name, Sequence: 9, Request: req}, Declaration: env}
}

// The built-in environment runs brain_component Tools itself, answers the
// lifecycle of a brain environment nobody routes, and passes everything
// else to the operator's environments; placements that cannot run are
// refused.
func TestBuiltinEnvironment(t *testing.T) {
	h, id := toolHost(t, loophost.Options{})
	next := &nextEnvs{routes: map[string]bool{"routed": true, "remote": true}}
	e := h.Environments(next)
	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	routed := api.Environment{Name: "routed", Driver: api.DriverBrain}
	remote := api.Environment{Name: "remote", Driver: api.DriverHTTP, URL: "http://127.0.0.1:9"}
	named := api.Environment{Name: "named", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"gone"}`)}
	wasm := impl(id, "")
	opaque := json.RawMessage(`{"tool":"x"}`)
	ctx := context.Background()

	for _, env := range []api.Environment{local, routed, remote} {
		if err := e.ValidateEnvironment(env); err != nil {
			t.Errorf("%s: %v", env.Name, err)
		}
	}
	if err := e.ValidateEnvironment(named); err == nil {
		t.Error("a brain environment naming a missing route was accepted")
	}
	for _, c := range []struct {
		env  api.Environment
		impl json.RawMessage
		ok   bool
	}{
		{local, wasm, true}, {routed, wasm, true}, {routed, opaque, true}, {remote, opaque, true},
		{local, opaque, false}, {remote, wasm, false}, {local, impl(strings.Repeat("b", 64), ""), false},
	} {
		if err := e.ValidatePlacement(c.env, c.impl); (err == nil) != c.ok {
			t.Errorf("%s %s: %v", c.env.Name, c.impl, err)
		}
	}
	in := json.RawMessage(`{"op":"echo"}`)
	for _, env := range []api.Environment{local, routed} {
		r, err := e.Deliver(ctx, op(env, envapi.Execute(wasm, in, nil, nil)))
		if err != nil || okValue(t, r) != string(in) {
			t.Fatalf("%s: %+v %v", env.Name, r, err)
		}
	}
	if r, _ := e.Deliver(ctx, op(local, envapi.Execute(opaque, in, nil, nil))); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeUnsupported {
		t.Fatalf("opaque on the built-in environment: %+v", r)
	}
	if r, _ := e.Deliver(ctx, op(local, envapi.Setup(nil))); r.Type != envapi.ReceiptResult {
		t.Fatalf("local setup %+v", r)
	}
	// A cancel of an invocation this host ran is answered here, even on a
	// routed environment; other operations of routed environments pass.
	if r, _ := e.Deliver(ctx, op(routed, envapi.Cancel(9))); r.Type != envapi.ReceiptResult || string(r.Output) == `"from next"` {
		t.Fatalf("cancel %+v", r)
	}
	e.Deliver(ctx, op(routed, envapi.Setup(nil)))
	e.Deliver(ctx, op(routed, envapi.Execute(opaque, in, nil, nil)))
	e.Deliver(ctx, op(remote, envapi.Execute(wasm, in, nil, nil)))
	e.Deliver(ctx, op(routed, envapi.Cancel(77)))
	want := []string{"setup routed", "execute routed", "execute remote", "cancel routed"}
	if strings.Join(next.got, ",") != strings.Join(want, ",") {
		t.Fatalf("next got %q, want %q", next.got, want)
	}
}

func FuzzToolImplementation(f *testing.F) {
	h := openHost(f, loophost.Options{ToolsDir: f.TempDir(), FilesystemAllow: []string{f.TempDir(), loophost.AllowScratch}})
	f.Add([]byte(`{"type":"brain_component","entrypoint":"run","id":"` + strings.Repeat("a", 64) + `","grants":{"filesystem":{"workspace":{"path":"/","access":"read"},"scratch":true},"secrets":["x"]}}`))
	f.Add([]byte(`{"type":"brain_component"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := h.ParseToolImplementation(b); err == nil {
			t.Fatalf("accepted %q with no Tool admitted", b)
		}
		_ = loophost.IsComponent(b)
	})
}
