package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// engine runs sessions whose loop is the admitted module id.
func engine(t testing.TB, h *loophost.Host, limits session.Limits) *session.Engine {
	t.Helper()
	return engineResolving(t, h.Resolve, limits)
}

// engineResolving runs sessions whose loops loops resolves.
func engineResolving(t testing.TB, loops func(context.Context, []byte) (agentloop.Func, error), limits session.Limits) *session.Engine {
	t.Helper()
	store, err := journal.OpenFileStore(filepath.Join(t.TempDir(), "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := session.New(session.Config{Store: store, Loops: loops, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Close(context.Background())
		_ = store.Close()
	})
	return e
}

func create(t testing.TB, e *session.Engine, id string) string {
	t.Helper()
	impl, _ := json.Marshal(map[string]string{"type": "brain_component", "entrypoint": "turn", "id": id})
	sum, err := e.Create(context.Background(), "", api.CreateSessionRequest{
		Model:     api.ModelConfig{Provider: "scripted", Name: "m"},
		Agentloop: &api.Agentloop{Implementation: impl},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum.SessionID
}

// A Wasm loop's failures are recorded with the same codes as a native
// loop's: a service error the guest returns keeps its code, a deadline is
// a timeout, a guest error is agentloop_failed.
func TestSessionFailureCodes(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, guest)
	e := engine(t, h, session.Limits{MaxModelCalls: 1, MaxTurn: time.Second})
	for msg, want := range map[string]string{
		"model-twice": api.FailureModelCallLimit,
		"spin":        api.FailureTimeout,
		"fail":        api.FailureAgentloopFailed,
		"exit":        api.FailureAgentloopFailed,
	} {
		t.Run(msg, func(t *testing.T) {
			sid := create(t, e, id)
			_, err := e.Send(context.Background(), sid, api.UserInput{Message: msg})
			var te *session.TurnError
			if !errors.As(err, &te) || te.Code != want {
				t.Fatalf("err = %v, want a turn failed with %s", err, want)
			}
		})
	}
}

func TestSessionRejectsUnadmittedLoops(t *testing.T) {
	h := openHost(t, loophost.Options{})
	e := engine(t, h, session.Limits{})
	impl := json.RawMessage(`{"type":"brain_component","entrypoint":"turn","id":"` + strings.Repeat("b", 64) + `"}`)
	_, err := e.Create(context.Background(), "", api.CreateSessionRequest{
		Model:     api.ModelConfig{Provider: "scripted", Name: "m"},
		Agentloop: &api.Agentloop{Implementation: impl},
	})
	if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "not admitted") {
		t.Fatalf("err = %v", err)
	}
}

// The embedded default loop, admitted like an upload, runs a text turn
// through the engine and saves the transcript.
func TestSessionTurnWithTheWasmDefaultLoop(t *testing.T) {
	h := openHost(t, loophost.Options{})
	id := admit(t, h, defaultLoop())
	e := engine(t, h, session.Limits{})
	sid := create(t, e, id)
	if _, err := e.Send(context.Background(), sid, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	tr, err := e.Transcript(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 2 || tr.Messages[0].Text() != "hello" || tr.Messages[1].Text() != "echo: hello" {
		t.Fatalf("transcript %+v", tr.Messages)
	}
}

// A loop that returns a service call's error wrapped with a message of
// 34 MiB fails its turn with that call's code and the head of its own
// message: the guest sends the host no more of the message than the host
// records, so it neither runs out of memory building the answer nor
// answers more than the host reads.
func TestLongGuestFailureKeepsItsCode(t *testing.T) {
	h := openHost(t, loophost.Options{})
	e := engine(t, h, session.Limits{MaxModelCalls: 1})
	sid := create(t, e, admit(t, h, guest))
	_, err := e.Send(context.Background(), sid, api.UserInput{Message: "fail-long"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Code != api.FailureModelCallLimit || !strings.HasPrefix(te.Message, "giving up xxxx") || len(te.Message) > 4096 {
		t.Fatalf("send answered %.300v, want the turn failed with %s and a message of at most 4096 bytes starting with the loop's", err, api.FailureModelCallLimit)
	}
}
