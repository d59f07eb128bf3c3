package session

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A large message is written to the journal twice (turn_started and the
// model_call_started that sends it), not once per record that mentions
// it: the transcript_delta that saves it refers to the model call, and
// the transcript rebuilt from the journal is the same.
func TestLargeMessageIsNotCopiedIntoTheTranscriptDelta(t *testing.T) {
	const size = 4 << 20
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{System: "be brief"})
	h.close()
	base := dirBytes(t, h.dir)
	h = openHarness(t, h.dir, Config{}, nil)
	msg := script(map[string]any{"reply": "ok", "pad": strings.Repeat("x", size)})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: msg}); err != nil {
		t.Fatal(err)
	}
	peak := dirBytes(t, h.dir) - base
	want, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	h.close() // a sync point: the commit log is retired
	settled := dirBytes(t, h.dir) - base
	t.Logf("message %d bytes: %.2fx on disk after the turn (segments and commit log), %.2fx after the sync point",
		len(msg), float64(peak)/float64(len(msg)), float64(settled)/float64(len(msg)))
	if settled > int64(len(msg))*5/2 {
		t.Errorf("journal grew by %d bytes (%.2fx) for a %d-byte message, want at most 2.5x", settled, float64(settled)/float64(len(msg)), len(msg))
	}
	if peak > int64(len(msg))*9/2 {
		t.Errorf("journal and commit log grew by %d bytes (%.2fx) before the sync point, want at most 4.5x", peak, float64(peak)/float64(len(msg)))
	}
	h = openHarness(t, h.dir, Config{}, nil)
	got, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.Messages) != 2 || got.Messages[0].Text() != msg || got.Messages[1].Text() != "ok" {
		t.Fatalf("transcript after reopening differs: %d messages", len(got.Messages))
	}
}
