package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// remoteLoopSession declares environment "box" over environment/v1 and an
// agentloop that runs as an execute on it.
func remoteLoopSession() api.CreateSessionRequest {
	return api.CreateSessionRequest{
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"type":"remote","name":"loop"}`), Environment: "box"},
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}},
	}
}

// waitOps polls until the fake environments received n operations of type
// rt.
func waitOps(t *testing.T, f *fakeEnvs, rt envapi.RequestType, n int) []Operation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ops := f.opsOf(rt)
		if len(ops) >= n {
			return ops
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s operations, want %d", len(ops), rt, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Cancelling a turn whose agentloop runs remotely stops the local wait
// and forwards the cancel to the executor: one cancel operation naming the
// execute's sequence, committed as tool_cancel_started before it is sent,
// and closed by tool_cancel_ended; the turn fails as cancelled.
func TestRemoteLoopCancelIsForwarded(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "hang"})
	id := h.create(remoteLoopSession())
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: "go"})
		errc <- err
	}()
	exec := waitOps(t, h.envs, envapi.RequestExecute, 1)[0]
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; Code(err) != api.CodeCancelled {
		t.Fatalf("send after interrupt: %v", err)
	}
	h.waitEvent(id, 0, api.KindToolCancelEnded)
	cancels := h.envs.opsOf(envapi.RequestCancel)
	if len(cancels) != 1 || cancels[0].Request.TargetSequence != exec.Sequence || cancels[0].Environment != "box" {
		t.Fatalf("cancel operations %+v, want one for the execute at %d", cancels, exec.Sequence)
	}
	recs := h.records(id)
	started := ofKind(recs, api.KindToolCancelStarted)
	if len(started) != 1 || started[0].Sequence != cancels[0].Sequence {
		t.Fatalf("tool_cancel_started %v, the cancel went out as operation %d", started, cancels[0].Sequence)
	}
	if p := decode[toolCancelStarted](t, started[0].Data); p.TargetSequence != exec.Sequence || p.Environment != "box" {
		t.Fatalf("tool_cancel_started = %+v", p)
	}
	if act := ofKind(recs, api.KindActivationStarted); len(act) != 1 || act[0].Sequence != exec.Sequence {
		t.Fatalf("the execute's sequence %d is not the activation's %v", exec.Sequence, act)
	}
	if f := decode[api.Failure](t, ofKind(recs, api.KindTurnFailed)[0].Data); f.Code != api.FailureCancelled {
		t.Fatalf("turn_failed = %+v", f)
	}
	// No effect is left open in the journal's fold.
	st := newState()
	for _, r := range recs {
		if err := st.apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.Open) != 0 {
		t.Fatalf("effects left open: %v", st.Open)
	}
}

// A remote execute stopped by the turn's own deadline is not cancelled:
// the environment was handed that deadline with the execute.
func TestRemoteLoopTimeoutSendsNoCancel(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxTurn = 300 * time.Millisecond
	h := newHarness(t, Config{Limits: lim}, map[string]string{"box": "hang"})
	id := h.create(remoteLoopSession())
	_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"})
	if Code(err) != api.FailureTimeout {
		t.Fatalf("send = %v, want a timeout", err)
	}
	exec := waitOps(t, h.envs, envapi.RequestExecute, 1)[0]
	if exec.Request.DeadlineMs == nil || *exec.Request.DeadlineMs > lim.MaxTurn.Milliseconds() {
		t.Fatalf("execute deadline %v, want at most %d ms", exec.Request.DeadlineMs, lim.MaxTurn.Milliseconds())
	}
	if n := len(h.envs.opsOf(envapi.RequestCancel)); n != 0 {
		t.Fatalf("%d cancel operations after the turn's own deadline", n)
	}
	if n := len(ofKind(h.records(id), api.KindToolCancelStarted)); n != 0 {
		t.Fatalf("%d tool_cancel_started after the turn's own deadline", n)
	}
}

// A remote agentloop's output is {result?} and nothing else: an output
// that also carries transcript or KV snapshots fails the turn as
// agentloop_failed and changes neither; a plain one ends the turn with its
// result.
func TestRemoteLoopOutputIsResultOnly(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "loopresult"})
	id := h.create(remoteLoopSession())
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if te := decode[turnEnded](t, ofKind(h.records(id), api.KindTurnEnded)[0].Data); string(te.Result) != `"fine"` {
		t.Fatalf("turn_ended result %s", te.Result)
	}
	before, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "loopsnapshot"
	h.envs.mu.Unlock()
	_, err = h.engine.Send(ctx, id, api.UserInput{Message: "again"})
	if Code(err) != api.FailureAgentloopFailed {
		t.Fatalf("send with a snapshot in the output = %v, want agentloop_failed", err)
	}
	after, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	if len(after.Messages) != len(before.Messages) || len(ofKind(recs, api.KindKVSet)) != 0 ||
		len(ofKind(recs, api.KindTranscriptDelta))+len(ofKind(recs, api.KindTranscriptReplaced)) != 0 {
		t.Fatalf("the snapshot changed state: %d → %d messages, records %v", len(before.Messages), len(after.Messages), kinds(recs))
	}
}

// A cancel whose delivery hangs is bounded (Config.CancelDelivery): it is
// recorded failed with an unknown, ambiguous outcome, never resent, and
// the session goes on.
func TestCancelDeliveryIsBounded(t *testing.T) {
	const bound = 300 * time.Millisecond
	h := newHarness(t, Config{CancelDelivery: bound}, map[string]string{"box": "hangcancel"})
	id := h.create(toolSession("hangcancel"))
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
		errc <- err
	}()
	waitOps(t, h.envs, envapi.RequestExecute, 1)
	interrupted := time.Now()
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; Code(err) != api.CodeCancelled {
		t.Fatalf("send after interrupt: %v", err)
	}
	ev := h.waitEvent(id, 0, api.KindToolCancelFailed)
	took := time.Since(interrupted)
	var f api.Failure
	if err := json.Unmarshal(ev.Data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Code != api.FailureUnknown || !f.Ambiguous {
		t.Fatalf("tool_cancel_failed = %+v, want unknown and ambiguous", f)
	}
	if took < bound || took > bound+5*time.Second {
		t.Fatalf("the cancel was given up after %s, bound %s", took, bound)
	}
	if n := len(h.envs.opsOf(envapi.RequestCancel)); n != 1 {
		t.Fatalf("%d cancel operations, want 1 (never resent)", n)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatalf("next turn: %v", err)
	}
}
