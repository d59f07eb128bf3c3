package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// A turn whose answer is JSON but not an object (null, as a guest whose
// encoder was handed a nil pointer writes) is not the TurnOutput the ABI
// asks for: the turn fails with agentloop_failed, as for any other
// malformed answer, instead of ending as if the loop had succeeded
// without a result.
func TestTurnAnswerThatIsNotAnObjectFails(t *testing.T) {
	h := openHost(t, loophost.Options{})
	for _, answer := range []string{`null`, ` null`, "\tnull\n"} {
		m := rawModule{
			pages: 1,
			alloc: i32c(1024),
			entry: i64c(int64(len(answer))),
			data:  [][]byte{active(0, answer)},
		}
		e := engine(t, h, session.Limits{})
		sid := create(t, e, admit(t, h, m.bytes()))
		_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
		var te *session.TurnError
		if !errors.As(err, &te) || te.Code != api.FailureAgentloopFailed {
			t.Fatalf("turn answering %q: send answered %v, want the turn failed with %s", answer, err, api.FailureAgentloopFailed)
		}
		ended := false
		for _, ev := range allEvents(t, e, sid) {
			switch ev.EventType {
			case api.KindTurnEnded:
				ended = true
			case api.KindTurnFailed:
				var f api.Failure
				if err := json.Unmarshal(ev.Data, &f); err != nil {
					t.Fatal(err)
				}
				if f.Code != api.FailureAgentloopFailed {
					t.Errorf("turn answering %q failed with %s, want %s", answer, f.Code, api.FailureAgentloopFailed)
				}
			}
		}
		if ended {
			t.Errorf("turn answering %q recorded turn_ended", answer)
		}
	}
}
