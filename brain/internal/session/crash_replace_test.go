package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// haltAfterCallEnd is a store that, once an append holding an
// environment_call_ended is durable, reports it and never returns, so
// that the process is killed right after that append.
type haltAfterCallEnd struct {
	journal.Store
}

func (h haltAfterCallEnd) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	if err := h.Store.Append(ctx, session, expectedNext, records); err != nil {
		return err
	}
	for _, r := range records {
		if r.Kind == api.KindEnvironmentCallEnded {
			fmt.Fprintln(os.Stdout, crashToken+"ended")
			select {}
		}
	}
	return nil
}

// crashReplaceChild creates a session and calls a replace method of its
// environment, halting once the call's end is durable.
func crashReplaceChild(t *testing.T, dir, id string) {
	fs, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	envs := newFakeEnvs(map[string]string{"other": "echo"})
	e, err := New(Config{Store: haltAfterCallEnd{fs}, Secrets: NewMemSecrets(), Environments: envs})
	if err != nil {
		t.Fatal(err)
	}
	envs.engine = e
	ctx := context.Background()
	if _, err := e.Create(ctx, id, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "other", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1", Methods: replaceMethods}},
	}); err != nil {
		t.Fatal(err)
	}
	_, _ = e.CallEnvironment(ctx, id, "other", "reset", json.RawMessage(`{}`))
	select {}
}

// A replace whose call ended is a new incarnation whatever point a crash
// hits: a restart never finds the call ended while the binding is still
// the old one (whose references and reporter would keep working).
func TestCrashDuringReplace(t *testing.T) {
	dir, id := t.TempDir(), NewSessionID()
	crash(t, dir, "replace", id, "ended")
	h := openHarness(t, dir, Config{}, map[string]string{"other": "echo"})
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	ended := ofKind(recs, api.KindEnvironmentCallEnded)
	replaced := ofKind(recs, kindEnvironmentReplaced)
	if len(ended) != len(replaced) {
		t.Fatalf("%d replace calls ended, %d incarnations recorded: %v", len(ended), len(replaced), kinds(recs))
	}
	if len(replaced) == 0 {
		return
	}
	// Only the new incarnation answers, and reports against the old
	// binding are refused.
	cur := &envapi.EnvironmentRef{Name: "other", Sequence: replaced[0].Sequence}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: cur}); err != nil {
		t.Fatalf("the new incarnation %d: %v", cur.Sequence, err)
	}
	if _, err := h.engine.Report(ctx, id, api.EnvironmentRef{Name: "other", Sequence: 1}, Report{Type: ReportEvent, EventType: "stale"}); err == nil {
		t.Fatal("a report against the replaced binding was accepted")
	}
}
