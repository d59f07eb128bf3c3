package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A turn answer the host refuses fails the turn with agentloop_failed and
// a short message, whatever it quotes of the answer: a member name or a
// number of 100 KiB is the guest's, and the failure is recorded twice
// (activation_failed and turn_failed).
func TestRefusedTurnAnswerHasABoundedMessage(t *testing.T) {
	h := openHost(t, loophost.Options{})
	e := engine(t, h, session.Limits{})
	long := strings.Repeat("k", 100<<10)
	for name, doc := range map[string]string{
		"unknown member": `{"` + long + `":1}`,
		"huge ref":       `{"error":{"message":"m","ref":1` + strings.Repeat("0", 100<<10) + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			loop := rawModule{pages: 3, alloc: i32c(160 << 10), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}
			sid := create(t, e, admit(t, h, loop.bytes()))
			_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
			var te *session.TurnError
			if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
				t.Fatalf("send answered %.200v, want the turn failed with %s", err, api.FailureAgentloopFailed)
			}
			for _, ev := range allEvents(t, e, sid) {
				if ev.EventType != api.KindActivationFailed && ev.EventType != api.KindTurnFailed {
					continue
				}
				var f api.Failure
				if err := json.Unmarshal(ev.Data, &f); err != nil {
					t.Fatal(err)
				}
				if len(f.Message) > 4096 {
					t.Errorf("%s recorded with a message of %d bytes: %.120q", ev.EventType, len(f.Message), f.Message)
				}
			}
		})
	}
}

// An answer followed by a stray closing bracket is not JSON: the turn
// fails with agentloop_failed and the Tool call with invalid_output, as
// for any other trailing data.
func TestAnswerWithAStrayBracketIsRefused(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	e := engine(t, h, session.Limits{})
	for _, doc := range []string{`{"result":1}}`, `{"result":1}]`} {
		loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}
		sid := create(t, e, admit(t, h, loop.bytes()))
		_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
		var te *session.TurnError
		if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
			t.Errorf("turn answer %s: send answered %v, want the turn failed with %s", doc, err, api.FailureAgentloopFailed)
		}
	}
	for _, doc := range []string{`{"outcome":{"status":"ok","value":1}}}`, `{"outcome":{"status":"ok","value":1}}]`} {
		tool := rawModule{pages: 1, alloc: i32c(1024), export: "run", entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}
		a, err := h.AdmitTool(context.Background(), tool.bytes())
		if err != nil || a.Status != loophost.StatusAdmitted {
			t.Fatalf("admit: %+v %v", a, err)
		}
		if r := h.RunTool(context.Background(), loophost.ToolCall{ID: a.ID}); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidOutput {
			t.Errorf("run answer %s: receipt %+v, want failure %s", doc, r, envapi.CodeInvalidOutput)
		}
	}
}
