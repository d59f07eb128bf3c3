package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// reloadFinal reloads session id from a journal holding recs (numbered
// here from 1) in an engine of its own, as a restart would, and answers
// the session's status, the records the reload committed after recs and
// the answer to a message sent to it.
func reloadFinal(t *testing.T, id string, recs []journal.Record) (api.Status, []journal.Record, error) {
	t.Helper()
	store, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := range recs {
		recs[i].Sequence = uint64(i + 1)
	}
	ctx := context.Background()
	if err := store.Append(ctx, id, 1, recs); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: store, Environments: newFakeEnvs(map[string]string{"box": "echo"})})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	sum, err := e.Summary(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, sendErr := e.Send(ctx, id, api.UserInput{Message: "again"})
	added, err := store.Read(ctx, id, uint64(len(recs)), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sum.Status, added, sendErr
}

// A reload of a session whose journal holds its final record
// (session_ended, session_creation_failed) records nothing that would
// run it again after that record: no interrupt rule and no failure of an
// activation or turn, which would fold the ended session back to idle
// and accept messages; an effect a delete started after it (a teardown
// cut short by a restart) is closed as any open effect is, and nothing
// else.
func TestReloadAfterFinalRecord(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	if _, err := h.engine.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	ended := h.records(id)
	if ended[len(ended)-1].Kind != api.KindSessionEnded {
		t.Fatalf("want an ended session: %v", kinds(ended))
	}
	created := ofKind(ended, api.KindSessionCreationEnded)[0].Sequence
	box := api.EnvironmentRef{Name: "box", Sequence: 1}
	teardown := rec(api.KindEnvironmentTeardownStarted, envStarted{Environment: "box", Binding: box, Request: envapi.Teardown()})

	t.Run("teardown after the end", func(t *testing.T) {
		recs := append(append([]journal.Record(nil), ended...), teardown)
		status, added, sendErr := reloadFinal(t, id, recs)
		if status != api.StatusEnded || !errors.Is(sendErr, ErrWrongState) {
			t.Errorf("after the reload: %s, message answered %v; want ended, refusing messages", status, sendErr)
		}
		if len(added) != 1 || added[0].Kind != api.KindEnvironmentTeardownFailed {
			t.Fatalf("the reload recorded %v, want only the teardown's failure", kinds(added))
		}
		if f := decode[api.Failure](t, added[0].Data); f.Sequence != uint64(len(recs)) || !f.Ambiguous {
			t.Errorf("teardown closed as %+v", f)
		}
	})

	t.Run("turn open at the end", func(t *testing.T) {
		// A turn, its activation and a tool call left open in a journal
		// that then ends.
		recs := append([]journal.Record(nil), ended[:created]...)
		turn := uint64(len(recs) + 1)
		recs = append(recs,
			rec(api.KindTurnStarted, turnStarted{Input: api.UserInput{Message: "hi"}}),
			rec(api.KindActivationStarted, activationStarted{Sequence: turn, Trigger: "turn"}),
			rec(api.KindToolCallStarted, toolCallStarted{CallID: "c1", Name: "echo", Environment: "box", Binding: 1,
				Input: json.RawMessage(`{}`), Activation: turn + 1}),
			rec(api.KindSessionEndStarted, struct{}{}),
			rec(api.KindSessionEnded, struct{}{}))
		status, added, sendErr := reloadFinal(t, id, recs)
		if status != api.StatusEnded || !errors.Is(sendErr, ErrWrongState) {
			t.Errorf("after the reload: %s, message answered %v; want ended, refusing messages", status, sendErr)
		}
		for _, r := range added {
			switch r.Kind {
			case api.KindTurnFailed, api.KindActivationFailed, kindSessionInterrupted, api.KindTurnStarted:
				t.Errorf("the reload recorded %s after session_ended: %v", r.Kind, kinds(added))
			}
		}
	})

	t.Run("teardown after a failed creation", func(t *testing.T) {
		recs := []journal.Record{ended[0],
			rec(api.KindEnvironmentSetupStarted, envStarted{Environment: "box", Binding: box, Request: envapi.Setup(nil)}),
			failed(api.KindEnvironmentSetupFailed, api.Failure{Code: "unsupported", Message: "no", Sequence: 2}),
			failed(api.KindSessionCreationFailed, api.Failure{Code: api.FailureEnvironmentPreparationFailed, Message: "environment box could not be set up"}),
			teardown,
		}
		status, added, sendErr := reloadFinal(t, id, recs)
		if status != api.StatusFailed || !errors.Is(sendErr, ErrWrongState) {
			t.Errorf("after the reload: %s, message answered %v; want failed, refusing messages", status, sendErr)
		}
		if len(added) != 1 || added[0].Kind != api.KindEnvironmentTeardownFailed {
			t.Fatalf("the reload recorded %v, want only the teardown's failure", kinds(added))
		}
	})
}
