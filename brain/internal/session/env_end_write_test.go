package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// fillOnCall is an Environments whose environment calls answer a result
// after making the journal's writes fail, as a disk that filled up while
// the call ran.
type fillOnCall struct {
	f     *fakeEnvs
	store *refusingStore
}

func (c *fillOnCall) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.Request.Type == envapi.RequestCall {
		c.f.record(op)
		c.store.failing.Store(true)
		return envapi.Result(json.RawMessage(`{"rows":3}`)), nil
	}
	return c.f.Deliver(ctx, op)
}

// An environment call whose end cannot be written answers its caller the
// write failure, not the provider's output (the journal would later say
// the call's outcome is unknown), and the call is closed once writes
// succeed again, also in a session kept in memory between requests.
func TestEnvironmentCallEndNotWritten(t *testing.T) {
	envs := &fillOnCall{}
	h, store := refusingHarness(t, Config{Environments: envs}, map[string]string{"box": "echo"})
	envs.f, envs.store = h.envs, store
	keep := int64(0)
	id := h.create(api.CreateSessionRequest{IdleTTLMs: &keep, Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}}})
	ctx := context.Background()

	out, err := h.engine.CallEnvironment(ctx, id, "box", "work", json.RawMessage(`{}`))
	if !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("call whose end was not written = %s, %v; want an error wrapping journal.ErrWrite", out, err)
	}
	store.failing.Store(false)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatalf("turn after writes came back: %v", err)
	}
	recs := h.records(id)
	started := ofKind(recs, api.KindEnvironmentCallStarted)
	if len(started) != 1 {
		t.Fatalf("%d environment_call_started, want 1: %v", len(started), kinds(recs))
	}
	var closed bool
	for _, r := range ofKind(recs, api.KindEnvironmentCallFailed) {
		f := decode[api.Failure](t, r.Data)
		if f.Sequence != started[0].Sequence {
			continue
		}
		closed = true
		if !f.Ambiguous || strings.Contains(f.Message, "restart") || !strings.Contains(f.Message, "could not be written") {
			t.Errorf("environment_call_failed %+v, want an ambiguous journal write failure", f)
		}
	}
	if !closed || len(ofKind(recs, api.KindEnvironmentCallEnded)) != 0 {
		t.Fatalf("environment call %d not closed as failed: %v", started[0].Sequence, kinds(recs))
	}
}

// failOnce fails the first append holding a record of kind with
// journal.ErrWrite, as a disk full for that one commit.
type failOnce struct {
	journal.Store
	kind   string
	failed atomic.Bool
}

func (f *failOnce) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	for _, r := range records {
		if r.Kind == f.kind && f.failed.CompareAndSwap(false, true) {
			return fmt.Errorf("%w: no space left on device", journal.ErrWrite)
		}
	}
	return f.Store.Append(ctx, session, expectedNext, records)
}

// A tool cancel whose end cannot be written is closed once writes succeed
// again, also in a session kept in memory between requests: when nothing
// of the session runs any more ("hang" stops at once), and while its
// execute is still stopping ("slowstop", 300 ms), when the next request
// runs on what is in memory.
func TestToolCancelEndNotWritten(t *testing.T) {
	for _, behaviour := range []string{"hang", "slowstop"} {
		t.Run(behaviour, func(t *testing.T) {
			store := &failOnce{kind: api.KindToolCancelEnded}
			h := wrappedHarness(t, Config{IdleTTL: KeepIdle}, map[string]string{"box": behaviour},
				func(fs journal.Store) journal.Store { store.Store = fs; return store })
			id := h.create(toolSession(behaviour))
			ctx := context.Background()
			done := make(chan error, 1)
			go func() {
				_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
				done <- err
			}()
			h.waitEvent(id, 0, api.KindToolCallStarted)
			if err := h.engine.Interrupt(ctx, id); err != nil {
				t.Fatal(err)
			}
			<-done
			for deadline := time.Now().Add(10 * time.Second); !store.failed.Load(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the cancel's end was never committed")
				}
			}
			if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
				t.Fatal(err)
			}
			recs := h.records(id)
			started := ofKind(recs, api.KindToolCancelStarted)
			closed := ofKind(recs, api.KindToolCancelFailed)
			if len(started) != 1 || len(closed) != 1 || decode[api.Failure](t, closed[0].Data).Sequence != started[0].Sequence {
				t.Fatalf("cancel not closed as failed: %v", kinds(recs))
			}
			if f := decode[api.Failure](t, closed[0].Data); !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
				t.Errorf("tool_cancel_failed %+v, want an ambiguous journal write failure", f)
			}
			// Closed before the next turn, which runs on a session with
			// nothing left open but its own work.
			if closed[0].Sequence > ofKind(recs, api.KindTurnStarted)[1].Sequence {
				t.Errorf("the cancel was closed after the next turn started: %v", kinds(recs))
			}
		})
	}
}

// A turn whose end cannot be written while a tool it started runs on in
// the background (it returned without finishing) does not keep the
// session busy once writes succeed again: the next message closes the
// turn as failed, ambiguous with the write failure as its message, and
// runs; the tool runs on and still finishes by itself.
func TestTurnEndNotWrittenBesideBackgroundTool(t *testing.T) {
	store := &failOnce{kind: api.KindTurnEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("turn whose end was not written = %v, want an error wrapping journal.ErrWrite", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := h.engine.Send(sctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatalf("message after writes came back, beside the background tool: %v", err)
	}
	recs := h.records(id)
	turns := ofKind(recs, api.KindTurnStarted)
	failedTurns := ofKind(recs, api.KindTurnFailed)
	if len(turns) != 2 || len(failedTurns) != 1 || len(ofKind(recs, api.KindTurnEnded)) != 1 {
		t.Fatalf("want the first turn failed and the second ended: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, failedTurns[0].Data); f.Sequence != turns[0].Sequence || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("turn_failed %+v, want the first turn's ambiguous journal write failure", f)
	}
	if failedTurns[0].Sequence > turns[1].Sequence {
		t.Errorf("the first turn was closed after the next one started: %v", kinds(recs))
	}
	tool := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	svc, err := h.engine.Execution(id, tool)
	if err != nil {
		t.Fatalf("the background tool after the next turn: %v", err)
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"late"`)}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatalf("the background tool's own finish: %v", err)
	}
	ended := ofKind(h.records(id), api.KindToolCallEnded)
	if len(ended) != 1 || decode[api.ToolCallEnded](t, ended[0].Data).Outcome.Status != api.OutcomeOK {
		t.Fatalf("the background tool closed with %v, want its own finish", ended)
	}
}
