package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// dirBytes sums the sizes of the regular files under dir; a commit log
// file counts the bytes it holds (it is preallocated: the zeros after its
// last entry are space reserved, not written). A file the journal removes
// during the walk (a commit log retired by a sync point) counts for
// nothing.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !info.Mode().IsRegular() {
			return err
		}
		if filepath.Base(filepath.Dir(path)) != ".commitlog" {
			n += info.Size()
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		n += int64(len(bytes.TrimRight(b, "\x00")))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A large message is written to the journal once (turn_started), not once
// per record that mentions it: the model_call_started that sends it and
// the transcript_delta that saves it refer to it. The public
// model_call_started event (page and stream) still holds the whole
// request delta, byte for byte as a copy would, and the transcript
// rebuilt from the journal is the same.
func TestLargeMessageIsJournalledOnce(t *testing.T) {
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
	if settled > int64(len(msg))*5/4 {
		t.Errorf("journal grew by %d bytes (%.2fx) for a %d-byte message, want at most 1.25x", settled, float64(settled)/float64(len(msg)), len(msg))
	}
	if peak > int64(len(msg))*5/2 {
		t.Errorf("journal and commit log grew by %d bytes (%.2fx) before the sync point, want at most 2.5x", peak, float64(peak)/float64(len(msg)))
	}
	h = openHarness(t, h.dir, Config{}, nil)
	// Pages are bounded by the events as served, so the expanded events
	// of one large message take a page each.
	var started *api.Event
	for after := uint64(0); started == nil; {
		page, err := h.engine.Events(context.Background(), id, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			break
		}
		for i := range page.Events {
			if page.Events[i].EventType == api.KindModelCallStarted {
				started = &page.Events[i]
			}
		}
		after = page.NextCursor
	}
	if started == nil {
		t.Fatal("no model_call_started event")
	}
	ms := decode[modelCallStarted](t, started.Data)
	copied := modelCallStarted{Messages: 1, Context: modelContext{ThroughSequence: ms.Context.ThroughSequence,
		Delta: transcriptDelta{Append: []api.Message{api.UserMessage(api.UserInput{Message: msg})}}}}
	if b, _ := json.Marshal(copied); !bytes.Equal(started.Data, b) {
		t.Fatalf("model_call_started event is not the whole request delta: %.300s", started.Data)
	}
	if ev := h.waitEvent(id, started.Sequence-1, api.KindModelCallStarted); !bytes.Equal(ev.Data, started.Data) {
		t.Fatalf("streamed model_call_started differs from the page's: %.300s", ev.Data)
	}
	got, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.Messages) != 2 || got.Messages[0].Text() != msg || got.Messages[1].Text() != "ok" {
		t.Fatalf("transcript after reopening differs: %d messages", len(got.Messages))
	}
}

// A fold that starts after the record a reference names (as from a
// checkpoint taken mid-turn) reads that record from the journal.
func TestReferenceResolvedFromTheJournal(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{System: "be brief"})
	msg := script(map[string]any{"reply": "ok", "pad": strings.Repeat("y", 64<<10)})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: msg}); err != nil {
		t.Fatal(err)
	}
	want, err := h.engine.Transcript(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	deltas := ofKind(recs, api.KindTranscriptDelta)
	d := decode[transcriptDelta](t, deltas[len(deltas)-1].Data)
	if len(d.Refs) == 0 {
		t.Fatalf("the transcript_delta copies the message: %.200s", deltas[len(deltas)-1].Data)
	}
	st := newState()
	st.lookup = h.engine.journalLookup(id)
	for _, r := range recs {
		if r.Kind == api.KindTranscriptDelta {
			st.held = nil // as if folded from a checkpoint taken just before
		}
		if err := st.apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(st.Transcript, want.Messages) {
		t.Fatalf("transcript folded with the journal's records differs")
	}
	st = newState()
	for _, r := range recs {
		if r.Kind == api.KindTranscriptDelta {
			st.held = nil
		}
		if err := st.apply(r); err != nil {
			return // without the journal the reference cannot be resolved: refused, not guessed
		}
	}
	t.Fatal("a reference folded without its record")
}
