package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// A session of the built-in loop whose configuration the loop refuses (a
// negative max_steps, which an earlier version took at create) fails
// every turn alike: agentloop_failed naming the field, its four records
// and nothing more, no model called; the session stays idle, taking
// messages, and starts nothing of its own between them.
func TestBuiltinLoopConfigurationRefusedOnEveryTurn(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle}, nil)
	ctx := context.Background()
	id := NewSessionID()
	if err := h.store.Append(ctx, id, 1, []journal.Record{
		{Sequence: 1, Kind: api.KindSessionCreationStarted, Data: json.RawMessage(`{"agentloop":{"implementation":{"type":"brain_builtin","name":"default"},"configuration":{"max_steps":-1}},"model":{"provider":"scripted","name":"test"},"tools":[],"environments":[]}`)},
		{Sequence: 2, Kind: api.KindSessionCreationEnded, Data: json.RawMessage(`{"sequence":1}`)},
	}); err != nil {
		t.Fatal(err)
	}
	var first string
	for turn := range 3 {
		before := len(h.records(id))
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: `{"reply":"should not run"}`})
		var te *TurnError
		if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed || !strings.Contains(te.Message, "max_steps") {
			t.Fatalf("turn %d = %v, want agentloop_failed naming max_steps", turn, err)
		}
		if turn == 0 {
			first = te.Message
		} else if te.Message != first {
			t.Errorf("turn %d failed with %q, the first with %q", turn, te.Message, first)
		}
		time.Sleep(10 * CoalesceWindow)
		added := kinds(h.records(id)[before:])
		want := []string{api.KindTurnStarted, api.KindActivationStarted, api.KindActivationFailed, api.KindTurnFailed}
		if strings.Join(added, " ") != strings.Join(want, " ") {
			t.Fatalf("turn %d recorded %v, want %v", turn, added, want)
		}
		sum, err := h.engine.Summary(ctx, id)
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("after turn %d: %+v %v, want idle", turn, sum, err)
		}
	}
}
