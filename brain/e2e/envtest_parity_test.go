package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestEnvtestAnswersEmitsAsBrain runs the same provider turn against a
// real Brain and against envtest's fake Brain: every emission is answered
// alike (committed, or refused with the same status and code), so a
// provider that passes its tests against envtest behaves the same against
// Brain. The fake Brain also refuses every name Brain reserves.
func TestEnvtestAnswersEmitsAsBrain(t *testing.T) {
	emits := []map[string]any{
		{"event_type": "progress", "data": map[string]any{"n": 1}},
		{"event_type": api.KindTurnEnded, "data": map[string]any{}},
		{"event_type": api.KindExtensionEvent, "data": map[string]any{}},
		{"event_type": api.LiveModelOutput, "data": map[string]any{}},
		{"event_type": api.CodeNotGranted, "data": map[string]any{}},
		{"event_type": api.FailureEnvironmentNotReady, "data": map[string]any{}},
		{"event_type": "environment_call_started", "data": map[string]any{}},
		{"event_type": "not an identifier", "data": map[string]any{}},
	}
	msg := script(map[string]any{"emit": emits})

	s := start(t, "")
	p := newProvider(t)
	id := loopSession(s, p)
	if r := s.send(id, msg); r.Status != http.StatusOK {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	evs := s.events(id)
	onBrain := turnResult(t, evs, lastTurn(t, evs)).Emits

	fake := envtest.NewBrain(t)
	cmds := envtest.NewCommands("s1", "agent")
	cmds.Brain = fake
	if _, body, resp, err := envtest.Post(t.Context(), nil, p.URL, providerCredential, cmds.Setup(nil)); err != nil || resp == nil {
		t.Fatalf("setup on the fake Brain: %v %s", err, body)
	}
	input, _ := json.Marshal(api.TurnInput{Input: &api.UserInput{Message: msg}, Transcript: []api.Message{}, KV: map[string]json.RawMessage{}, Events: []api.Event{}})
	exec := cmds.ExecuteWith(json.RawMessage(`{"kind":"loop"}`), input, nil, func(seq uint64) *envapi.Grant {
		g := fake.AgentloopGrant("s1", seq)
		return &g
	})
	_, body, resp, err := envtest.Post(t.Context(), nil, p.URL, providerCredential, exec)
	if err != nil || resp == nil || resp.Receipt.Type != envapi.ReceiptResult {
		t.Fatalf("execute on the fake Brain: %v %s", err, body)
	}
	var out struct {
		Result loopResult `json:"result"`
	}
	if err := json.Unmarshal(resp.Receipt.Output, &out); err != nil {
		t.Fatal(err)
	}
	got := out.Result.Emits
	if len(onBrain) != len(emits) || len(got) != len(emits) {
		t.Fatalf("emits answered: Brain %+v, envtest %+v", onBrain, got)
	}
	for i := range emits {
		r, f := onBrain[i], got[i]
		if (r.Sequence == 0) != (f.Sequence == 0) || r.Status != f.Status || r.Code != f.Code {
			t.Errorf("emit %v: Brain answered %+v, envtest %+v", emits[i]["event_type"], r, f)
		}
	}

	g := fake.ToolGrant("s1", 900)
	names := append(append(append([]string{}, api.RecordKinds...), api.ErrorCodes...), api.FailureCodes...)
	for _, p := range api.EffectPrefixes {
		names = append(names, p+"_started", p+"_ended", p+"_failed")
	}
	for _, name := range names {
		if status, code := callGrant(t, &g, "", "emit", map[string]any{"event_type": name, "data": nil}); status != http.StatusUnprocessableEntity || code != "reserved_name" {
			t.Errorf("envtest emit of %q: %d %s, want 422 reserved_name as Brain answers", name, status, code)
		}
	}
}
