package hosts

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// TestKeyedFinishSentAgainAfterTheCallClosed: a finish whose answer was
// lost is sent again under its key after it closed the call and the host
// let the call go: it is answered with the first's sequence instead of
// being refused, and the call is finished once. Another finish under the
// same key is a conflict; one under another key is refused, the call
// being closed.
func TestKeyedFinishSentAgainAfterTheCallClosed(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	startBackground(t, r, conn, reg.HostID, 1)
	finish := api.HostResult{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 1, Update: api.ToolExecutionUpdate{Type: api.UpdateFinish}}
	first, err := r.UpdateKeyed(context.Background(), reg.HostID, "k1", finish)
	if err != nil {
		t.Fatal(err)
	}
	if n := held(t, r, reg.HostID); n != 0 {
		t.Fatalf("%d calls held after the finish", n)
	}
	again, err := r.UpdateKeyed(context.Background(), reg.HostID, "k1", finish)
	if err != nil || again != first {
		t.Fatalf("the finish sent again under its key = %d, %v; want %d, as the first was answered", again, err, first)
	}
	other := finish
	other.Update.Outcome = &api.Outcome{Status: api.OutcomeOK}
	if _, err := r.UpdateKeyed(context.Background(), reg.HostID, "k1", other); !errors.Is(err, ErrKeyConflict) {
		t.Fatalf("another finish under the same key = %v, want ErrKeyConflict", err)
	}
	if _, err := r.UpdateKeyed(context.Background(), reg.HostID, "k2", finish); !errors.Is(err, session.ErrExecutionClosed) {
		t.Fatalf("a finish under another key = %v, want refused: the call is closed", err)
	}
}

// TestKeyedAnswersAreBounded: a host keeps the answers of its latest
// keyed requests only, and a refused request keeps none (it may be sent
// again).
func TestKeyedAnswersAreBounded(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir(), MaxCommands: 2})
	reg, conn := connected(t, r)
	startBackground(t, r, conn, reg.HostID, 1)
	returned := api.HostResult{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 1, Update: api.ToolExecutionUpdate{Type: api.UpdateReturned}}
	for i := range 10 {
		if _, err := r.UpdateKeyed(context.Background(), reg.HostID, fmt.Sprint("k", i), returned); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.UpdateKeyed(context.Background(), reg.HostID, "refused", api.HostResult{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 1, Update: api.ToolExecutionUpdate{Type: api.UpdateResult}}); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("a result without an outcome = %v, want refused", err)
	}
	r.mu.Lock()
	h := r.hosts[reg.HostID]
	kept, order := len(h.answers), len(h.answered)
	r.mu.Unlock()
	if kept != r.maxAnswers() || order != kept {
		t.Fatalf("%d answers kept (%d in order), want the latest %d", kept, order, r.maxAnswers())
	}
}
