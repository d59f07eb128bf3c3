package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// slowReset is an Environments whose call "reset" waits for gate; it
// records every execute it receives and answers it at once.
type slowReset struct {
	started chan struct{}
	gate    chan struct{}
	mu      sync.Mutex
	execs   []Operation
}

func (f *slowReset) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	switch op.Request.Type {
	case envapi.RequestCall:
		if op.Request.Name == "reset" {
			close(f.started)
			<-f.gate
		}
		return envapi.Result(json.RawMessage(`{}`)), nil
	case envapi.RequestExecute:
		f.mu.Lock()
		f.execs = append(f.execs, op)
		f.mu.Unlock()
		return envapi.Result(mustJSON(envapi.OK(op.Request.Input))), nil
	}
	return envapi.Accepted(), nil
}

func (f *slowReset) executes() []Operation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Operation(nil), f.execs...)
}

// A method with effect "replace" needs idle execution for as long as it
// runs: a message that arrives while the replace is in flight is refused
// as busy, and nothing is executed on the incarnation being replaced.
func TestReplaceKeepsExecutionIdleWhileInFlight(t *testing.T) {
	ctx := context.Background()
	h, envs, id, reset := resetInFlight(t)
	sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := h.engine.Send(sendCtx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
	close(envs.gate)
	if err := <-reset; err != nil {
		t.Fatalf("reset: %v", err)
	}
	if ops := envs.executes(); len(ops) != 0 {
		t.Fatalf("a tool executed on box (binding %d) while box was being replaced", ops[0].Binding.Sequence)
	}
	if Code(err) != api.CodeConflict {
		t.Fatalf("message while a replace runs = %v, want it refused as busy", err)
	}
	// Once the replace is over the session takes messages again, and the
	// tool runs on the new incarnation.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	replaced := ofKind(h.records(id), kindEnvironmentReplaced)
	if ops := envs.executes(); len(replaced) != 1 || len(ops) != 1 || ops[0].Binding.Sequence != replaced[0].Sequence {
		t.Fatalf("after the replace: %d executes, %d replacements", len(ops), len(replaced))
	}
}

// An end that arrives while an environment call made before it is being
// delivered waits for the call's answer before it detaches: the call's
// records (here a replacement) come before session_ended, never after.
func TestEndWaitsForEnvironmentCallInFlight(t *testing.T) {
	ctx := context.Background()
	h, envs, id, reset := resetInFlight(t)
	ended := make(chan error, 1)
	go func() {
		_, err := h.engine.End(ctx, id)
		ended <- err
	}()
	time.Sleep(200 * time.Millisecond) // End has run as far as it does alone
	close(envs.gate)
	if err := <-reset; err != nil {
		t.Fatalf("reset: %v", err)
	}
	if err := <-ended; err != nil {
		t.Fatalf("end: %v", err)
	}
	recs := h.records(id)
	if last := recs[len(recs)-1]; last.Kind != api.KindSessionEnded {
		t.Fatalf("records after session_ended: %v", kinds(recs))
	}
	replaced := ofKind(recs, kindEnvironmentReplaced)
	detach := ofKind(recs, api.KindEnvironmentDetachStarted)
	if len(replaced) != 1 || len(detach) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	if op := decode[envStarted](t, detach[0].Data); op.Binding.Sequence != replaced[0].Sequence {
		t.Fatalf("detached binding %d, want the replacement %d", op.Binding.Sequence, replaced[0].Sequence)
	}
}

// resetInFlight creates a session whose environment box has the replace
// method reset, calls it, and answers once the call is being delivered
// (held until envs.gate closes), with the channel of its answer.
func resetInFlight(t *testing.T) (*harness, *slowReset, string, <-chan error) {
	t.Helper()
	envs := &slowReset{started: make(chan struct{}), gate: make(chan struct{})}
	h := newHarness(t, Config{Environments: envs}, nil)
	req := toolSession("echo")
	req.Environments[0].Methods = replaceMethods
	id := h.create(req)
	reset := make(chan error, 1)
	go func() {
		_, err := h.engine.CallEnvironment(context.Background(), id, "box", "reset", json.RawMessage(`{}`))
		reset <- err
	}()
	<-envs.started
	return h, envs, id, reset
}
