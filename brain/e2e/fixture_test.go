package e2e

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// providerToken is the credential sessions declare for the fixture.
const providerToken = "env-credential-SECRET-5b1f"

// modelKey is the model API key every test session is created with.
const modelKey = "sk-model-SECRET-9c2e"

// fixture is an envsdk provider served on loopback by envtest.Provider,
// which records every operation before envsdk sees it. Behaviour is
// chosen by the implementation {"kind": K} of an execute and by the
// configuration {"setup"?, "detach"?, "teardown"?, "release"?} of the
// binding.
type fixture struct {
	envsdk.Base
	*envtest.Provider
	later     chan error   // results of finishes made after return
	eventRuns atomic.Int32 // event-triggered activations of runLoop
}

func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureAt(t, "127.0.0.1:0") }

// newFixtureAt serves a fixture on addr.
func newFixtureAt(t *testing.T, addr string) *fixture {
	t.Helper()
	f := &fixture{later: make(chan error, 16)}
	f.Provider = envtest.NewProviderAt(t, envsdk.NewHandler(f, &envsdk.Options{Token: providerToken, StopGrace: 2 * time.Second}), addr)
	return f
}

// received answers the recorded operations of a request type ("" for
// all).
func (f *fixture) received(t envapi.RequestType) []envtest.Operation { return f.Received(t, "") }

// waitFor waits until at least n operations of type t arrived.
func (f *fixture) waitFor(t envapi.RequestType, n int) []envtest.Operation {
	return f.WaitFor(t, "", n)
}

// callbackTokens answers the callback tokens of the executes received.
func (f *fixture) callbackTokens() []string {
	var toks []string
	for _, o := range f.Received(envapi.RequestExecute, "") {
		if g := o.Cmd.Operation.Request.Callback; g != nil {
			toks = append(toks, g.Token)
		}
	}
	return toks
}

type bindingConf struct {
	Setup    string `json:"setup,omitempty"`    // fail | hold | release
	Detach   string `json:"detach,omitempty"`   // fail | hold
	Teardown string `json:"teardown,omitempty"` // fail_once | hold
	Release  string `json:"release,omitempty"`  // fail | hold
}

func (f *fixture) conf(c *envsdk.Ctx) bindingConf {
	var bc bindingConf
	_ = c.DecodeConfiguration(&bc)
	return bc
}

func (f *fixture) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	switch f.conf(c).Setup {
	case "fail":
		return envsdk.SetupResult{}, envsdk.Fail("setup_refused", "this binding cannot be set up")
	case "hold":
		select {
		case <-f.Gate("setup"):
		case <-c.Context().Done():
		}
	case "release":
		return envsdk.SetupResult{OnTurnEnd: "release"}, nil
	}
	return envsdk.SetupResult{}, nil
}

func (f *fixture) Detach(c *envsdk.Ctx) error {
	switch f.conf(c).Detach {
	case "fail":
		return envsdk.Fail("detach_refused", "detach failed")
	case "hold":
		select {
		case <-f.Gate("detach"):
		case <-c.Context().Done():
		}
	}
	return nil
}

func (f *fixture) Teardown(c *envsdk.Ctx) error {
	switch f.conf(c).Teardown {
	case "fail_once":
		if f.ShouldFail("teardown") {
			return envsdk.Fail("teardown_refused", "teardown failed")
		}
	case "hold":
		select {
		case <-f.Gate("teardown"):
		case <-c.Context().Done():
		}
	}
	return nil
}

// Methods: release (the turn-end hook) and inspect.
func (f *fixture) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"release": {Description: "turn end", InputSchema: json.RawMessage(`{"type":"object"}`),
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
				switch f.conf(c).Release {
				case "fail":
					return nil, envsdk.Fail("release_refused", "release failed")
				case "hold":
					select {
					case <-f.Gate("release"):
					case <-c.Context().Done():
					}
				}
				return map[string]any{"released": json.RawMessage(input)}, nil
			}},
		"ctrl": {Description: "uses the operation's controller context", InputSchema: json.RawMessage(`{"type":"object"}`),
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) { return f.useContext(c) }},
		"inspect": {Description: "inspect", InputSchema: json.RawMessage(`{"type":"object"}`),
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
				return map[string]any{"binding": c.BindingKey(), "input": json.RawMessage(input)}, nil
			}},
	}
}

func (f *fixture) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(x.Implementation, &impl)
	switch impl.Kind {
	case "echo":
		return envapi.Result(x.Input), nil
	case "hang":
		<-c.Context().Done()
		return envapi.Receipt{}, context.Cause(c.Context())
	case "fail":
		return envapi.Receipt{}, envsdk.Fail("unsupported", "m").WithRetryable(true).WithDetails(map[string]int{"x": 1})
	case "unknown":
		return envapi.Unknown("lost track"), nil
	case "bad_output":
		return envapi.Result(json.RawMessage(`{"count":"many"}`)), nil
	case "returned":
		inv := x.Invocation
		gate := f.Gate("finish")
		go func() {
			<-gate
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out := envapi.OK(json.RawMessage(`"finished later"`))
			_, err := inv.Finish(ctx, &out)
			f.later <- err
		}()
		return envapi.Returned(nil), nil
	case "control":
		ctx := c.Context()
		list, err := x.Invocation.Environments(ctx, envapi.ControlRequest{Operation: "list"})
		if err != nil {
			return envapi.Receipt{}, err
		}
		ref := &envapi.EnvironmentRef{Name: "box", Sequence: 1}
		call, err := x.Invocation.Environments(ctx, envapi.ControlRequest{Operation: "call", Environment: ref, Method: "inspect", Input: json.RawMessage(`{"from":"tool"}`)})
		if err != nil {
			return envapi.Receipt{}, err
		}
		_, denied := x.Invocation.Environments(ctx, envapi.ControlRequest{Operation: "call", Environment: ref, Method: "release", Input: json.RawMessage(`{}`)})
		_, hidden := x.Invocation.Environments(ctx, envapi.ControlRequest{Operation: "get", Environment: &envapi.EnvironmentRef{Name: "other", Sequence: 1}})
		return envsdk.Output(map[string]any{"list": list, "call": call, "denied": errString(denied), "hidden": errString(hidden)})
	case "agentloop":
		return f.runLoop(c, x)
	case "ctrl":
		viaContext, err := c.Emit(c.Context(), "ctrl_progress", map[string]string{"via": "context"})
		if err != nil {
			return envapi.Receipt{}, err
		}
		viaCallback, err := x.Invocation.Emit(c.Context(), "tool_progress", map[string]string{"via": "callback"})
		if err != nil {
			return envapi.Receipt{}, err
		}
		return envsdk.Output(map[string]uint64{"context": viaContext, "callback": viaCallback})
	case "emit":
		if _, err := x.Invocation.Emit(c.Context(), "progress", map[string]any{"step": 1, "origin": map[string]any{"kind": "agentloop"}}); err != nil {
			return envapi.Receipt{}, err
		}
		return envsdk.Output("emitted")
	case "report":
		if _, err := x.Invocation.Result(c.Context(), envapi.OK(json.RawMessage(`"partial"`))); err != nil {
			return envapi.Receipt{}, err
		}
		if _, err := x.Invocation.Emit(c.Context(), "progress", map[string]int{"step": 1}); err != nil {
			return envapi.Receipt{}, err
		}
		return envsdk.Output("reported")
	}
	return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, "no such kind "+impl.Kind)
}

// env declares the fixture as an http environment.
func (f *fixture) env(name string, conf *bindingConf) api.Environment {
	var raw json.RawMessage
	if conf != nil {
		raw, _ = json.Marshal(conf)
	}
	return api.Environment{Name: name, Driver: api.DriverHTTP, URL: f.URL, Credential: providerToken, Configuration: raw}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// useContext emits an event and an actionable observation and lists the
// environments through the operation's controller context.
func (f *fixture) useContext(c *envsdk.Ctx) (any, error) {
	ctx := c.Context()
	emitted, err := c.Emit(ctx, "ctrl_progress", map[string]any{"step": 1, "origin": map[string]any{"kind": "tool"}})
	if err != nil {
		return nil, err
	}
	observed, err := c.EmitResult(ctx, envapi.Observation{Scope: envapi.ScopeResource, Resource: "disk", Code: "lost", Message: "m"}, "the disk is gone")
	if err != nil {
		return nil, err
	}
	list, err := c.Environments(ctx, envapi.ControlRequest{Operation: "list"})
	if err != nil {
		return nil, err
	}
	_, denied := c.Environments(ctx, envapi.ControlRequest{Operation: "call", Environment: &envapi.EnvironmentRef{Name: c.Environment, Sequence: c.Binding.Sequence},
		Method: "inspect", Input: json.RawMessage(`{}`)})
	return map[string]any{"emitted": emitted, "observed": observed, "list": list, "denied": errString(denied)}, nil
}
