package session

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// checkpointEdits turn a real checkpoint projection into ones a journal
// written by someone else might hold: FuzzEngineCheckpoint's seeds.
var checkpointEdits = []func(map[string]any){
	func(p map[string]any) {},
	func(p map[string]any) { p["status"], p["turn"] = "running", 0 },
	func(p map[string]any) { p["status"], p["activation"] = "running", 99 },
	func(p map[string]any) { p["open"] = map[string]any{"3": map[string]any{"prefix": "bogus"}} },
	func(p map[string]any) { p["transcript"] = []any{map[string]any{"role": "user", "content": nil}, nil} },
	func(p map[string]any) {
		p["envs"] = map[string]any{"box": map[string]any{"state": "ready", "binding": 1}}
	},
	func(p map[string]any) { p["actionable"], p["delivered"] = []any{1, 2, 9999}, 1 },
	func(p map[string]any) { p["status"] = "ending" },
	func(p map[string]any) { p["config"] = map[string]any{"agentloop": map[string]any{"implementation": 7}} },
}

// FuzzEngineCheckpoint reopens a session whose checkpoint frame holds any
// projection, as a journal written by someone else might, and uses it: a
// turn, its summary, transcript and events. The engine answers each with
// a result or an error, in time, and never panics. An edit below
// len(checkpointEdits) applies that edit to the fixture's own checkpoint;
// any other takes payload as it is.
func FuzzEngineCheckpoint(f *testing.F) {
	fixture := f.TempDir()
	var once sync.Once
	var id string
	var through uint64
	var good []byte
	for i := range checkpointEdits {
		f.Add([]byte(nil), uint8(i))
	}
	f.Add([]byte(`{"next":0}`), uint8(255))
	f.Fuzz(func(t *testing.T, payload []byte, edit uint8) {
		once.Do(func() {
			h := openHarness(t, fixture, Config{CheckpointEvery: 8}, map[string]string{"box": "echo"})
			id = h.create(toolSession("echo"))
			for i := 0; i < 3; i++ {
				if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "m"}); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if through, good, err = h.store.ReadCheckpoint(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			h.close()
		})
		if good == nil {
			t.Fatal("no fixture")
		}
		if int(edit) < len(checkpointEdits) {
			var p map[string]any
			if err := json.Unmarshal(good, &p); err != nil {
				t.Fatal(err)
			}
			checkpointEdits[edit](p)
			payload, _ = json.Marshal(p)
		}
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
			t.Fatal(err)
		}
		store, err := journal.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.WriteCheckpoint(context.Background(), id, through, payload); err != nil {
			t.Fatal(err)
		}
		_ = store.Close()
		h := openHarness(t, dir, Config{CheckpointEvery: 8}, map[string]string{"box": "echo"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, sendErr := h.engine.Send(ctx, id, api.UserInput{Message: "more"})
		_, _ = h.engine.Summary(ctx, id)
		tr, _ := h.engine.Transcript(ctx, id)
		_, _ = h.engine.Events(ctx, id, 0)
		if edit == 0 && (sendErr != nil || len(tr.Messages) != 8) {
			// The fixture's own checkpoint: the session goes on from it.
			t.Fatalf("on the session's own checkpoint: Send = %v, %d messages after 4 turns", sendErr, len(tr.Messages))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the engine took %v to answer on a checkpoint of %s", d, payload)
		}
	})
}
