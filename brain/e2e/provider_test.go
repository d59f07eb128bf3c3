package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// providerCredential is the credential sessions declare for the provider.
const providerCredential = "e2e-provider-credential"

// provider is an environment/v1 provider written with envsdk, served on
// loopback by envtest.Provider, which records every operation before
// envsdk sees it. What an execute does is chosen by its implementation
// {"kind": K} (see Execute); a binding configured {"release": true}
// registers the turn-end method "release".
type provider struct {
	envsdk.Base
	*envtest.Provider
	failRelease atomic.Bool
	later       chan error // errors of finishes made after return
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	p := &provider{later: make(chan error, 8)}
	p.Provider = envtest.NewProvider(t, envsdk.NewHandler(p, &envsdk.Options{Token: providerCredential, StopGrace: 10 * time.Second}))
	return p
}

// env declares the provider as an http environment.
func (p *provider) env(name string, release bool) api.Environment {
	var conf json.RawMessage
	if release {
		conf = json.RawMessage(`{"release":true}`)
	}
	return api.Environment{Name: name, Driver: api.DriverHTTP, URL: p.URL, Credential: providerCredential, Configuration: conf}
}

func (p *provider) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	var conf struct {
		Release bool `json:"release"`
	}
	if err := c.DecodeConfiguration(&conf); err != nil {
		return envsdk.SetupResult{}, err
	}
	if conf.Release {
		return envsdk.SetupResult{OnTurnEnd: "release"}, nil
	}
	return envsdk.SetupResult{}, nil
}

// Methods: release waits for the gate "release" when it is held, and
// fails while failRelease is set.
func (p *provider) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"release": {Description: "turn end", InputSchema: json.RawMessage(`{"type":"object"}`),
			Run: func(c *envsdk.Ctx, input json.RawMessage) (any, error) {
				select {
				case <-p.Gate("release"):
				case <-c.Context().Done():
				case <-p.Done():
				}
				if p.failRelease.Load() {
					return nil, envsdk.Fail("release_refused", "release failed")
				}
				return map[string]any{"released": input}, nil
			}},
	}
}

// Execute runs the implementation {"kind": K}:
//
//	loop      the remote agentloop (runLoop)
//	echo      answers its input
//	emit      emits "tool_progress" whose payload claims another origin
//	fail      fails unsupported/"m", retryable, details {"x":1}
//	hold      holds the execute 5 s whatever its deadline, then answers
//	hang      waits until Brain cancels it or its deadline passes
//	returned  returns, and finishes through the callback once the gate
//	          "finish" opens
func (p *provider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(x.Implementation, &impl)
	switch impl.Kind {
	case "loop":
		return p.runLoop(c, x)
	case "echo":
		return envapi.Result(x.Input), nil
	case "emit":
		seq, err := x.Invocation.Emit(c.Context(), "tool_progress", map[string]any{"step": 2, "origin": map[string]any{"kind": "agentloop", "sequence": 1}})
		if err != nil {
			return envapi.Receipt{}, err
		}
		return envsdk.Output(map[string]uint64{"emitted": seq})
	case "fail":
		return envapi.Receipt{}, envsdk.Fail("unsupported", "m").WithRetryable(true).WithDetails(map[string]int{"x": 1})
	case "hold":
		select {
		case <-time.After(5 * time.Second):
		case <-p.Done():
		}
		return envsdk.Output("held")
	case "hang":
		select {
		case <-c.Context().Done():
			return envapi.Receipt{}, context.Cause(c.Context())
		case <-p.Done():
			return envsdk.Output("released")
		}
	case "returned":
		inv, gate := x.Invocation, p.Gate("finish")
		go func() {
			select {
			case <-gate:
			case <-p.Done():
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out := envapi.OK(json.RawMessage(`"finished later"`))
			_, err := inv.Finish(ctx, &out)
			p.later <- err
		}()
		return envapi.Returned(nil), nil
	}
	return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, "no such kind "+impl.Kind)
}

// loopScript is what the remote agentloop does in a turn, read from the
// user message: emissions, then model calls, then one dispatch.
type loopScript struct {
	Emit []struct {
		EventType string          `json:"event_type"`
		Data      json.RawMessage `json:"data"`
	} `json:"emit"`
	Model    int `json:"model"`
	Dispatch []struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"dispatch"`
}

// callResult is what the loop reports of one service call: the committed
// sequence, or the HTTP status and ApiError code of a refusal.
type callResult struct {
	Sequence uint64 `json:"sequence,omitempty"`
	Status   int    `json:"status,omitempty"`
	Code     string `json:"code,omitempty"`
	Error    string `json:"error,omitempty"`
}

func resultOf(seq uint64, err error) callResult {
	if err == nil {
		return callResult{Sequence: seq}
	}
	var ce *envsdk.CallError
	if errors.As(err, &ce) {
		return callResult{Status: ce.Status, Code: ce.Code, Error: ce.Message}
	}
	return callResult{Error: err.Error()}
}

// loopResult is the remote agentloop's turn result.
type loopResult struct {
	Emits   []callResult        `json:"emits,omitempty"`
	Models  []callResult        `json:"models,omitempty"`
	Returns []envapi.ToolReturn `json:"returns,omitempty"`
	// Events are the sequences an event-triggered activation got.
	Events []uint64 `json:"events,omitempty"`
}

// runLoop is the remote agentloop. A turn follows the loopScript in its
// message (dispatching on environment "box") and returns what each call
// answered; an event-triggered activation returns the events it got.
func (p *provider) runLoop(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx, inv := c.Context(), x.Invocation
	var in api.TurnInput
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
	}
	var res loopResult
	if in.Input == nil {
		for _, ev := range in.Events {
			res.Events = append(res.Events, ev.Sequence)
		}
		return envsdk.Output(map[string]any{"result": res})
	}
	var script loopScript
	if err := json.Unmarshal([]byte(in.Input.Message), &script); err != nil {
		return envsdk.Output(map[string]any{"result": res})
	}
	for _, e := range script.Emit {
		seq, err := inv.Emit(ctx, e.EventType, e.Data)
		res.Emits = append(res.Emits, resultOf(seq, err))
	}
	for range script.Model {
		_, err := inv.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}})
		res.Models = append(res.Models, resultOf(0, err))
	}
	if len(script.Dispatch) > 0 {
		var calls []envapi.ToolInvocation
		for i, d := range script.Dispatch {
			calls = append(calls, envapi.ToolInvocation{CallID: fmt.Sprintf("call_%d", i+1), Name: d.Name, Environment: "box", Input: d.Input})
		}
		returns, err := inv.Dispatch(ctx, calls)
		if err != nil {
			return envapi.Receipt{}, err
		}
		res.Returns = returns
	}
	return envsdk.Output(map[string]any{"result": res})
}

// tool places a tool of kind on environment env.
func tool(name, env, kind string) api.Tool {
	return api.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
		Placements: map[string]api.Placement{env: {Implementation: json.RawMessage(`{"kind":"` + kind + `"}`)}}}
}

// remoteLoop is the agentloop that runs on environment "agent".
func remoteLoop() *api.Agentloop {
	return &api.Agentloop{Implementation: json.RawMessage(`{"kind":"loop"}`), Configuration: json.RawMessage(`{}`), Environment: "agent"}
}

// createSession creates a session with the scripted model.
func (s *server) createSession(req api.CreateSessionRequest) string {
	s.t.Helper()
	req.Model = api.ModelConfig{Provider: "scripted", Name: "e2e"}
	if req.Tools == nil {
		req.Tools = []api.Tool{}
	}
	if req.Environments == nil {
		req.Environments = []api.Environment{}
	}
	if s.api == nil {
		s.api = s.client()
	}
	sess, err := s.api.Sessions.Create(context.Background(), req)
	if err != nil {
		s.t.Fatalf("create: %v", err)
	}
	return sess.ID
}

// script is a user message the scripted model or the remote loop follows.
func script(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// turnResult decodes the remote loop's result from the turn_ended of turn.
func turnResult(t *testing.T, evs []api.Event, turn uint64) loopResult {
	t.Helper()
	for _, ev := range evs {
		if ev.EventType != api.KindTurnEnded {
			continue
		}
		var d struct {
			Sequence uint64     `json:"sequence"`
			Result   loopResult `json:"result"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("turn_ended %s: %v", ev.Data, err)
		}
		if d.Sequence == turn {
			return d.Result
		}
	}
	t.Fatalf("no turn_ended for turn %d: %v", turn, kinds(evs))
	return loopResult{}
}

// lastTurn answers the sequence of the last turn_started.
func lastTurn(t *testing.T, evs []api.Event) uint64 {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].EventType == api.KindTurnStarted {
			return evs[i].Sequence
		}
	}
	t.Fatalf("no turn_started: %v", kinds(evs))
	return 0
}

// ofKind answers the events of kind.
func ofKind(evs []api.Event, kind string) []api.Event {
	var out []api.Event
	for _, ev := range evs {
		if ev.EventType == kind {
			out = append(out, ev)
		}
	}
	return out
}

// dataField decodes field name of an event's data into a value of T.
func dataField[T any](t *testing.T, ev api.Event, name string) T {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("%s data %s: %v", ev.EventType, ev.Data, err)
	}
	var v T
	if raw, ok := m[name]; ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s.%s = %s: %v", ev.EventType, name, raw, err)
		}
	}
	return v
}

// callGrant POSTs {method, input} to a grant with its token, rebased on
// base when given (a restarted server listens elsewhere), and answers the
// status and the ApiError code.
func callGrant(t *testing.T, g *envapi.Grant, base, method string, input any) (int, string) {
	t.Helper()
	url := g.URL
	if base != "" {
		i := strings.Index(url, "/v1/")
		url = base + url[i:]
	}
	in, _ := json.Marshal(input)
	body, _ := json.Marshal(envapi.ExecutionCall{Method: method, Input: in})
	return postBearer(t, url, g.Token, body)
}

// postBearer POSTs body to url with the bearer token and answers the
// status and the ApiError code, or the body when it is not an ApiError.
func postBearer(t *testing.T, url, bearer string, body []byte) (int, string) {
	t.Helper()
	status, b := postGrant(t, url, bearer, json.RawMessage(body))
	var e api.ApiError
	if json.Unmarshal(b, &e) == nil && e.Code != "" {
		return status, e.Code
	}
	return status, string(b)
}
