package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// A turn whose end cannot be written because the disk filled up while it
// ran is closed, once space is back, as failed with what happened, not as
// interrupted by a restart, and the session takes turns again.
func TestTurnEndOnFullDiskRecordedAsWriteFailure(t *testing.T) {
	mnt := fullfs.Mount(t, 64<<20)
	h := openHarness(t, filepath.Join(mnt, "sessions"), Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	// The reply is large, so the turn's end needs blocks the full disk
	// does not have.
	big := strings.Repeat("r", 1<<20)
	done := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"delay_ms": 500, "reply": big})})
		done <- err
	}()
	h.waitEvent(id, 0, api.KindModelCallStarted)
	filler := fullfs.Fill(t, mnt)
	err := <-done
	if !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send on a disk that filled up = %v, want journal.ErrWrite", err)
	}
	filler.Free(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sum, err := h.engine.Summary(ctx, id)
		if err == nil && sum.Status == api.StatusIdle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("summary after space came back: %+v %v", sum, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var found bool
	for _, r := range h.records(id) {
		if r.Kind != api.KindTurnFailed {
			continue
		}
		var f api.Failure
		_ = json.Unmarshal(r.Data, &f)
		if strings.Contains(f.Message, "restart") || !strings.Contains(f.Message, "no space left on device") || !f.Ambiguous {
			t.Errorf("turn_failed %+v, want an ambiguous journal write failure", f)
		}
		found = true
	}
	if !found {
		t.Fatal("no turn_failed closes the turn")
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "again"}); err != nil {
		t.Fatalf("next turn: %v", err)
	}
}
