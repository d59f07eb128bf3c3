package brain_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// The commit budget (RATIONALE.md, "Serial durable commits per request"):
// the durable commits each request kind waits on today. A change that adds
// a serial commit fails these tests; one that removes a commit lowers the
// number here.
const (
	// W1, a synchronous text turn: the idempotency claim with
	// turn_started, activation_started and model_call_started; then the
	// idempotency answer with the deferred model_call_ended, the
	// transcript and the turn's end.
	budgetSyncText = 2
	// An async submission before its 202: the idempotency claim and its
	// answer (the turn_started sequence) with turn_started and
	// activation_started, one commit.
	budgetAsyncAccept = 1
	// ... and its turn after the 202: model_call_started and the turn's
	// end.
	budgetAsyncTurn = 2
	// W2, a synchronous tool turn (model step, 4 parallel tool calls,
	// model step, answer): the W1 first commit; tool_call_started of the
	// four calls in one append (with the deferred end of the first model
	// call); the second model_call_started (with the deferred ends of the
	// tools); the answer with the turn's end.
	budgetSyncTools = 4
)

// echoEnv is an environment/v1 provider that accepts every setup and
// answers each execute with a result receipt carrying its input.
func echoEnv() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := envapi.Accepted()
		if cmd.Operation.Request.Type == envapi.RequestExecute {
			rec = envapi.Result(cmd.Operation.Request.Input)
		}
		out, _ := json.Marshal(envapi.NewResponse(cmd.Operation.Sequence, rec))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

func commitBrain(t testing.TB) (*braintest.Brain, *client.Session) {
	t.Helper()
	b := braintest.Start(t, braintest.Options{Environments: map[string]braintest.Environment{"box": {Handler: echoEnv()}}})
	return b, newSession(t, b)
}

// newSession creates a session with the tool echo in the environment box.
func newSession(t testing.TB, b *braintest.Brain) *client.Session {
	t.Helper()
	sess, err := b.Client(t).Sessions.Create(context.Background(), api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: "box"}},
		Tools: []api.Tool{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// perRequest answers the commits per request of kind, before the answer
// and in all, after checking that n requests ran.
func perRequest(t *testing.T, srv *brain.Server, kind string, n int64) (before, total int64) {
	t.Helper()
	st := srv.CommitStats()[kind]
	if st.Requests != n {
		t.Fatalf("%s: %d requests counted, want %d (stats %+v)", kind, st.Requests, n, srv.CommitStats())
	}
	if st.BeforeAnswer%n != 0 || st.Total%n != 0 {
		t.Fatalf("%s: %+v is not the same count for each of %d requests", kind, st, n)
	}
	return st.BeforeAnswer / n, st.Total / n
}

func TestCommitBudgetSyncTextTurn(t *testing.T) {
	b, sess := commitBrain(t)
	const turns = 3
	for i := 0; i < turns; i++ {
		sum, err := sess.Send(context.Background(), api.UserInput{Message: "hello"})
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("send: %+v %v", sum, err)
		}
	}
	before, total := perRequest(t, b.Server, "send_message", turns)
	if before != budgetSyncText || total != budgetSyncText {
		t.Errorf("a synchronous text turn waited on %d durable commits (%d in all), want %d", before, total, budgetSyncText)
	}
}

func TestCommitBudgetAsyncSubmission(t *testing.T) {
	b, sess := commitBrain(t)
	const turns = 3
	for i := 0; i < turns; i++ {
		if _, err := sess.Submit(context.Background(), api.UserInput{Message: "hello"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			sum, err := sess.Refresh(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			st := b.Server.CommitStats()["send_message.async"]
			if sum.Status == api.StatusIdle && st.Total == int64(i+1)*(budgetAsyncAccept+budgetAsyncTurn) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("turn %d: status %s, stats %+v", i, sum.Status, st)
			}
			time.Sleep(time.Millisecond)
		}
	}
	before, _ := perRequest(t, b.Server, "send_message.async", turns)
	if before != budgetAsyncAccept {
		t.Errorf("an async submission waited on %d durable commits before its 202, want %d", before, budgetAsyncAccept)
	}
	// Settle: nothing else is committed for the turns afterwards.
	time.Sleep(50 * time.Millisecond)
	if _, total := perRequest(t, b.Server, "send_message.async", turns); total != budgetAsyncAccept+budgetAsyncTurn {
		t.Errorf("an async submission and its turn made %d durable commits, want %d", total, budgetAsyncAccept+budgetAsyncTurn)
	}
}

func TestCommitBudgetSyncToolTurn(t *testing.T) {
	b, sess := commitBrain(t)
	calls := make([]map[string]any, 4)
	for i := range calls {
		calls[i] = map[string]any{"name": "echo", "input": map[string]any{"n": i}}
	}
	msg, _ := json.Marshal(map[string]any{"tool_calls": calls, "reply": "done"})
	const turns = 3
	for i := 0; i < turns; i++ {
		sum, err := sess.Send(context.Background(), api.UserInput{Message: string(msg)})
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("send: %+v %v", sum, err)
		}
	}
	tr, err := sess.Transcript(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, m := range tr.Messages {
		for _, blk := range m.Content {
			if blk.Type == "tool_result" {
				results++
			}
		}
	}
	if results != 4*turns {
		t.Fatalf("transcript holds %d tool results, want %d", results, 4*turns)
	}
	before, total := perRequest(t, b.Server, "send_message", turns)
	if before != budgetSyncTools || total != budgetSyncTools {
		t.Errorf("a synchronous tool turn waited on %d durable commits (%d in all), want %d", before, total, budgetSyncTools)
	}
}
