package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// TestTurnResultTooLargeForTheJournal: a loop whose result is larger than
// a journal record may be fails its turn with agentloop_failed, as a loop
// that failed does; the turn is not left to a restart to close as
// interrupted, the session takes the next message, and the store reports
// no write fault.
func TestTurnResultTooLargeForTheJournal(t *testing.T) {
	huge := json.RawMessage(`"` + strings.Repeat("x", 65<<20) + `"`)
	loops := map[string]agentloop.Func{
		"huge": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
			if in.Input != nil && in.Input.Message == "small" {
				return api.TurnOutput{Result: json.RawMessage(`"ok"`)}, nil
			}
			return api.TurnOutput{Result: huge}, nil
		},
	}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("huge")})
	_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "big"})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
		t.Fatalf("Send = %.300v, want the turn failed %s", err, api.FailureAgentloopFailed)
	}
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindTurnFailed)); n != 1 {
		t.Fatalf("%d turn_failed records, want 1: %v", n, kinds(recs))
	}
	if f := h.engine.fault(id, false); f != "" {
		t.Fatalf("a result too large was noted as a write fault: %s", f)
	}
	sum, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "small"})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("the next turn = %+v, %v; want it served", sum, err)
	}
	if n := len(ofKind(h.records(id), api.KindTurnEnded)); n != 1 {
		t.Fatalf("%d turn_ended records after the next turn, want 1", n)
	}
}
