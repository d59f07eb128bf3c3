package envtest_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// An event type a provider may not use (a leading underscore, a journal
// record kind, an effect record, a live frame, an API error or failure
// code) is refused 422 reserved_name on emit, through a controller
// context and on the reporter, as Brain refuses it; nothing is committed.
func TestReservedEventTypesAreRefused(t *testing.T) {
	b := envtest.NewBrain(t)
	tool := b.ToolGrant("s1", 7)
	ctl := b.ContextGrant("s1", "ws", 8)
	rep := b.ReporterGrant("s1", "ws", 1)
	for _, kind := range []string{"_private", "tool_call_ended", "environment_setup_started", "model_output",
		"not_granted", "emit_limit", "interrupted", "environment_incarnation_stale", "_extension_event"} {
		status, body := call(t, tool, "emit", map[string]any{"event_type": kind, "data": 1})
		want(t, "emit "+kind, status, body, 422, `"reserved_name"`)
		status, body = call(t, ctl, "emit", map[string]any{"event_type": kind, "data": 1})
		want(t, "context emit "+kind, status, body, 422, `"reserved_name"`)
		status, body, err := post(t, rep.URL, rep.Token, map[string]any{"type": "event", "event_type": kind, "data": 1})
		if err != nil {
			t.Fatal(err)
		}
		code := `"reserved_name"`
		if strings.HasPrefix(kind, "_") {
			code = `"invalid_request"` // not an identifier, refused as Brain's reporter decodes it
		}
		want(t, "reporter event "+kind, status, body, 422, code)
	}
	if got := b.LastSequence(); got != 99 {
		t.Errorf("reserved event types committed up to %d", got)
	}
	status, body := call(t, tool, "emit", map[string]any{"event_type": "tool_call_progress", "data": 1})
	want(t, "an extension kind", status, body, 200, "100")
}

// A model request without messages is refused as Brain refuses it.
func TestModelRequestNeedsMessages(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("s1", 7)
	for _, in := range []any{map[string]any{}, map[string]any{"messages": nil}} {
		status, body := call(t, g, "model", in)
		want(t, "model without messages", status, body, 422, `"invalid_request"`)
	}
}

// The controller context of an operation closes when the operation
// returns, as Brain closes it: a provider that keeps the grant and calls
// it later is answered 401.
func TestContextClosesWhenTheOperationReturns(t *testing.T) {
	b := envtest.NewBrain(t)
	srv := httptest.NewServer(envsdk.NewHandler(&envsdk.Base{}, &envsdk.Options{Token: "t"}))
	t.Cleanup(srv.Close)
	cmds := envtest.NewCommands("s1", "ws")
	cmds.Brain = b
	setup := cmds.Setup(nil)
	g := setup.Operation.Context
	if _, _, resp, err := envtest.Post(context.Background(), nil, srv.URL, "t", setup); err != nil || resp == nil {
		t.Fatalf("setup: %v %+v", err, resp)
	}
	status, body := call(t, *g, "emit", map[string]any{"event_type": "late", "data": nil})
	want(t, "context of a returned setup", status, body, 401, `"unauthorized"`)
	if !b.Revoked(g.Token) {
		t.Error("the context of a returned setup is not revoked")
	}
}

// A cancel closes the controller context of the execute it names, even
// while that execute is still running.
func TestCancelClosesTheTargetContext(t *testing.T) {
	b := envtest.NewBrain(t)
	srv := httptest.NewServer(envsdk.NewHandler(&envsdk.Base{}, &envsdk.Options{Token: "t"}))
	t.Cleanup(srv.Close)
	cmds := envtest.NewCommands("s1", "ws")
	cmds.Brain = b
	exec := cmds.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil)
	g := exec.Operation.Context
	status, body := call(t, *g, "environments", map[string]any{"operation": "list"})
	want(t, "context of a running execute", status, body, 200, `"environments"`)
	_, _, _, _ = envtest.Post(context.Background(), nil, srv.URL, "t", cmds.Cancel(exec.Operation.Sequence))
	status, body = call(t, *g, "environments", map[string]any{"operation": "list"})
	if status != 401 || !strings.Contains(body, `"unauthorized"`) {
		t.Errorf("context of a cancelled execute: %d %s, want 401", status, body)
	}
}

// result, returned and finish take the Outcome Brain's callback takes: an
// ok outcome without a value and an error or unknown message past 4096
// characters are committed; a status outside the five, an error outcome
// without an identifier code and an unknown field are refused.
func TestCallbackOutcomesAsBrainTakesThem(t *testing.T) {
	b := envtest.NewBrain(t)
	long := strings.Repeat("m", 5000)
	for _, tc := range []struct {
		method  string
		outcome any
		status  int
	}{
		{"result", map[string]any{"status": "ok"}, 200},
		{"result", map[string]any{"status": "error", "error": map[string]any{"code": "boom", "message": long}}, 200},
		{"returned", map[string]any{"status": "unknown", "message": long}, 200},
		{"finish", map[string]any{"status": "ok"}, 200},
		{"result", map[string]any{"status": "fine"}, 422},
		{"result", map[string]any{"status": "error", "error": map[string]any{"code": "not an identifier"}}, 422},
		{"result", map[string]any{"status": "error"}, 422},
		{"result", map[string]any{"status": "ok", "value": 1, "extra": 1}, 422},
		{"result", nil, 422},
	} {
		g := b.ToolGrant("s1", 7)
		status, body := call(t, g, tc.method, tc.outcome)
		if status != tc.status {
			in, _ := json.Marshal(tc.outcome)
			t.Errorf("%s %.80s: %d %.200s, want %d", tc.method, in, status, body, tc.status)
		}
	}
}

// set_transcript takes messages whose role is user, assistant or
// developer, as Brain takes them; another role, a message that is not an
// object and one without a role are refused and nothing is committed.
func TestSetTranscriptRolesAsBrainTakesThem(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.AgentloopGrant("s1", 7)
	text := []map[string]any{{"type": "text", "text": "hi"}}
	for _, bad := range []any{
		[]any{map[string]any{"role": "system", "content": text}},
		[]any{map[string]any{"role": "tool", "content": text}},
		[]any{map[string]any{"content": text}},
		[]any{1},
	} {
		status, body := call(t, g, "set_transcript", bad)
		want(t, "set_transcript with a bad message", status, body, 422, `"invalid_request"`)
	}
	if got := b.LastSequence(); got != 99 {
		t.Errorf("refused transcripts committed up to %d", got)
	}
	ok := []any{
		map[string]any{"role": "developer", "content": text},
		map[string]any{"role": "user", "content": text},
		map[string]any{"role": "assistant", "content": text},
	}
	status, body := call(t, g, "set_transcript", ok)
	want(t, "set_transcript", status, body, 200, "100")
}

// dispatch takes tool invocations as Brain takes them: a call_id that is
// empty or repeated in the dispatch is refused 422 invalid_request (a
// call's result is matched to it by its call_id) and nothing is
// committed; distinct call_ids are answered one ToolReturn each.
func TestDispatchCallIDsAsBrainTakesThem(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.AgentloopGrant("s1", 7)
	inv := func(id string) map[string]any {
		return map[string]any{"call_id": id, "name": "echo", "environment": "box", "input": map[string]any{}}
	}
	for _, bad := range [][]any{
		{inv("")},
		{inv("c1"), inv("c1")},
		{inv("c1"), inv("c2"), inv("c1")},
	} {
		status, body := call(t, g, "dispatch", bad)
		want(t, "dispatch with an empty or repeated call_id", status, body, 422, `"invalid_request"`)
	}
	if got := b.LastSequence(); got != 99 {
		t.Errorf("refused dispatches committed up to %d", got)
	}
	status, body := call(t, g, "dispatch", []any{inv("c1"), inv("c2")})
	want(t, "dispatch", status, body, 200, `"call_id":"c2"`)
}
