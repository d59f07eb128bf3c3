package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestControllerContext: every environment operation carries its own
// controller context {url, token, methods: [environments, emit, result]},
// bounded by the environment's grants, independent of a tool's callback
// and closed (401) once the operation returned.
func TestControllerContext(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := newFixture(t)
	box := f.env("box", nil)
	box.Environments = []api.EnvironmentGrant{{Environment: "box", Permissions: []string{"read"}}}
	id := c.create(api.CreateSessionRequest{
		Environments: []api.Environment{box, f.env("other", nil)},
		Tools:        []api.Tool{tool("ctl", "box", "ctrl")},
	}).SessionID

	setup := f.waitFor(envapi.RequestSetup, 1)[0].Cmd.Operation
	if g := setup.Context; g == nil || strings.Join(g.Methods, ",") != "environments,emit,result" ||
		!strings.HasSuffix(g.URL, "/v1/sessions/"+id+"/executions/"+jsonNum(setup.Sequence)+"/call") || g.Token == "" ||
		setup.Reporter == nil || g.Token == setup.Reporter.Token {
		t.Fatalf("setup context %+v", setup.Context)
	}
	if status, _ := callGrantBody(t, setup.Context, "emit", map[string]any{"event_type": "late", "data": nil}); status != http.StatusUnauthorized {
		t.Errorf("context of a returned setup: %d, want 401", status)
	}

	// A method call uses its context: emit and result commit with the
	// environment's origin, list is bounded by the environment's grants.
	var out struct {
		Output struct {
			Emitted  uint64 `json:"emitted"`
			Observed uint64 `json:"observed"`
			List     struct {
				Environments []envapi.EnvironmentView `json:"environments"`
			} `json:"list"`
			Denied string `json:"denied"`
		} `json:"output"`
	}
	c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/environments/box/calls/ctrl", map[string]any{"input": map[string]any{}}, &out)
	o := out.Output
	if len(o.List.Environments) != 1 || o.List.Environments[0].Reference.Name != "box" {
		t.Errorf("context granted read on box listed %+v", o.List.Environments)
	}
	if !strings.Contains(o.Denied, "not_granted") && !strings.Contains(o.Denied, "403") {
		t.Errorf("ungranted call through the context: %q", o.Denied)
	}
	evs := c.events(id)
	wantOrigin := api.EventOrigin{Kind: api.OriginEnvironment, Environment: &api.EnvironmentRef{Name: "box", Sequence: 1}}
	byseq := map[uint64]api.Event{}
	for _, ev := range evs {
		byseq[ev.Sequence] = ev
	}
	emitted, observed := byseq[o.Emitted], byseq[o.Observed]
	if emitted.EventType != "ctrl_progress" || !sameOrigin(emitted.Origin, wantOrigin) || !strings.Contains(string(emitted.Data), `"step":1`) {
		t.Errorf("emitted %+v origin %+v", emitted, emitted.Origin)
	}
	if observed.EventType != api.KindOutputEmitted || !sameOrigin(observed.Origin, wantOrigin) || !strings.Contains(string(observed.Data), `"resource":"disk"`) {
		t.Errorf("observed %+v origin %+v", observed, observed.Origin)
	}
	// The actionable observation wakes the loop.
	c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindActivationStarted && ev.Sequence > o.Observed })
	call := f.received(envapi.RequestCall)[0].Cmd.Operation
	if status, _ := callGrantBody(t, call.Context, "emit", map[string]any{"event_type": "late", "data": nil}); status != http.StatusUnauthorized {
		t.Errorf("context of a returned call: %d, want 401", status)
	}

	// An execute's context is not its callback: the same emit lands with
	// environment origin through the one and tool origin through the
	// other.
	c.waitEvent(id, func(ev api.Event) bool {
		return (ev.EventType == api.KindActivationEnded || ev.EventType == api.KindActivationFailed) && ev.Sequence > o.Observed
	})
	if status, body := c.send(id, toolCalls("ctl")); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	exec := f.received(envapi.RequestExecute)[0].Cmd.Operation
	if exec.Context == nil || exec.Request.Callback == nil || exec.Context.Token == exec.Request.Callback.Token ||
		exec.Context.URL != exec.Request.Callback.URL {
		t.Fatalf("execute context %+v callback %+v", exec.Context, exec.Request.Callback)
	}
	evs = c.events(id)
	toolOrigin := api.EventOrigin{Kind: api.OriginTool, Sequence: exec.Sequence}
	if ev := ofKind(evs, "ctrl_progress"); len(ev) != 2 || !sameOrigin(ev[1].Origin, wantOrigin) {
		t.Errorf("context emit of an execute: %+v", ev)
	}
	if ev := ofKind(evs, "tool_progress"); len(ev) != 1 || !sameOrigin(ev[0].Origin, toolOrigin) {
		t.Errorf("callback emit of an execute: %+v", ev)
	}
	// The tool finished through its callback, which closed with it; the
	// execute's context closes when the execute answers, which may come
	// just after the turn that the finish let go on.
	if status, _ := callGrantBody(t, exec.Request.Callback, "emit", map[string]any{"event_type": "late", "data": nil}); status != http.StatusUnauthorized {
		t.Errorf("callback of a finished execute: %d, want 401", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ := callGrantBody(t, exec.Context, "emit", map[string]any{"event_type": "late", "data": nil})
		if status == http.StatusUnauthorized {
			break
		}
		if status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("context of an execute that answered: %d, want 401", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// callGrantBody POSTs one service call to a grant.
func callGrantBody(t *testing.T, g *envapi.Grant, method string, input any) (int, []byte) {
	t.Helper()
	in, _ := json.Marshal(input)
	return postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: method, Input: in})
}

func sameOrigin(got *api.EventOrigin, want api.EventOrigin) bool {
	if got == nil {
		return false
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return bytes.Equal(a, b)
}
