package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// parkedLoop creates a session whose remote agentloop (on "agent") parks
// its turn, with the tools given on "box", and answers the Brain, the
// session and the loop's callback grant. The turn is cancelled when the
// test ends.
func parkedLoop(t *testing.T, tools ...api.Tool) (*brainServer, *apiClient, *fixture, string, *envapi.Grant) {
	t.Helper()
	b := newBrain(t, brain.Limits{MaxTurn: time.Minute})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"kind":"agentloop"}`), Environment: "agent"},
		Environments: []api.Environment{f.env("agent", nil), f.env("box", nil)},
		Tools:        tools,
	}).SessionID
	turn := c.submit(id, "hang")
	g := f.waitFor(envapi.RequestExecute, 1)[0].Cmd.Operation.Request.Callback
	if g == nil {
		t.Fatal("the agentloop execute carried no callback")
	}
	t.Cleanup(func() {
		c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
		c.waitEvent(id, withData(api.KindTurnFailed, "sequence", turn))
	})
	return b, c, f, id, g
}

// TestDispatchReturnsCommittedEvents: the events of a ToolReturn are the
// public events of the tool's synchronous phase as the session records
// them, with their sequences and recording times, including a result and
// an extension event the tool committed through its own callback.
func TestDispatchReturnsCommittedEvents(t *testing.T) {
	_, c, _, id, g := parkedLoop(t, tool("reporter", "box", "report"))
	status, body := callGrantBody(t, g, "dispatch", []envapi.ToolInvocation{{CallID: "c1", Name: "reporter", Environment: "box", Input: json.RawMessage(`{}`)}})
	if status != http.StatusOK {
		t.Fatalf("dispatch: %d %s", status, body)
	}
	var returns []api.ToolReturn
	if err := json.Unmarshal(body, &returns); err != nil {
		t.Fatal(err)
	}
	if len(returns) != 1 || returns[0].CallID != "c1" || !returns[0].Finished {
		t.Fatalf("dispatch answered %s", body)
	}
	recorded := map[uint64]api.Event{}
	for _, ev := range c.events(id) {
		recorded[ev.Sequence] = ev
	}
	var kinds []string
	for _, ev := range returns[0].Events {
		kinds = append(kinds, ev.EventType)
		want, ok := recorded[ev.Sequence]
		got, _ := json.Marshal(ev)
		exp, _ := json.Marshal(want)
		if !ok || !bytes.Equal(got, exp) {
			t.Errorf("returned event %s, recorded as %s", got, exp)
		}
	}
	if want := []string{api.KindToolResultEmitted, "progress", api.KindToolCallEnded}; !slices.Equal(kinds, want) {
		t.Errorf("returned events %v, want %v", kinds, want)
	}
}

// TestCallbackInputsAreStrict: an Outcome, an emit input or a kv_put
// input with a field the service does not know (such as a result's value
// sent as "output") is refused as invalid_request naming the field, and
// nothing is recorded, instead of the field being dropped.
func TestCallbackInputsAreStrict(t *testing.T) {
	_, c, f, id, loop := parkedLoop(t, tool("later", "box", "returned"))
	t.Cleanup(func() { f.Open("finish") })
	status, body := callGrantBody(t, loop, "dispatch", []envapi.ToolInvocation{{CallID: "c1", Name: "later", Environment: "box", Input: json.RawMessage(`{}`)}})
	if status != http.StatusOK {
		t.Fatalf("dispatch: %d %s", status, body)
	}
	var tg *envapi.Grant
	for _, x := range f.received(envapi.RequestExecute) {
		if x.Cmd.Operation.Environment == "box" {
			tg = x.Cmd.Operation.Request.Callback
		}
	}
	if tg == nil {
		t.Fatal("the tool execute carried no callback")
	}
	before := len(c.events(id))
	for _, tc := range []struct {
		grant  *envapi.Grant
		method string
		input  string
		field  string
	}{
		{tg, "result", `{"status":"ok","output":"lost"}`, "output"},
		{tg, "result", `{"status":"error","error":{"code":"x","message":"m","retryable":false,"hint":1}}`, "hint"},
		{tg, "returned", `{"status":"ok","value":1,"extra":true}`, "extra"},
		{tg, "finish", `{"status":"cancelled","reason":"r"}`, "reason"},
		{tg, "emit", `{"event_type":"progress","payload":{"n":1}}`, "payload"},
		{loop, "emit", `{"event_type":"progress","data":1,"extra":2}`, "extra"},
		{loop, "kv_put", `{"key":"a","value":1,"ttl":5}`, "ttl"},
	} {
		status, body := postGrant(t, tc.grant.URL, tc.grant.Token, envapi.ExecutionCall{Method: tc.method, Input: json.RawMessage(tc.input)})
		var e api.ApiError
		_ = json.Unmarshal(body, &e)
		if status != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, tc.field) {
			t.Errorf("%s %s: %d %s, want 422 invalid_request naming %s", tc.method, tc.input, status, body, tc.field)
		}
	}
	if evs := c.events(id); len(evs) != before {
		t.Errorf("refused calls recorded %s", kindsLine(evs[before:]))
	}
	// The tool's callback is still live: a well-formed call is taken.
	if status, body := callGrantBody(t, tg, "result", envapi.OK(json.RawMessage(`"kept"`))); status != http.StatusOK {
		t.Errorf("result after refusals: %d %s", status, body)
	}
}
