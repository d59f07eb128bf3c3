package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// gatedReleases is an Environments whose setups register the turn-end
// method release; the release of environment held waits for gate.
type gatedReleases struct {
	held    string
	entered chan struct{}
	gate    chan struct{}

	mu  sync.Mutex
	ops []Operation
}

func (g *gatedReleases) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	g.mu.Lock()
	g.ops = append(g.ops, op)
	g.mu.Unlock()
	switch op.Request.Type {
	case envapi.RequestSetup:
		return envapi.AcceptedOnTurnEnd("release"), nil
	case envapi.RequestCall:
		if op.Environment == g.held {
			g.entered <- struct{}{}
			<-g.gate
		}
	}
	return envapi.Accepted(), nil
}

func (g *gatedReleases) sent() []Operation {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Operation(nil), g.ops...)
}

// A session ended while its turn-end release is still being delivered
// sends no release after it started ending: no environment is called
// once it is detached, and nothing is recorded after session_ended.
func TestEndDuringTurnEndRelease(t *testing.T) {
	h, envs, id, release := releaseInFlight(t)
	ctx := context.Background()
	<-envs.entered // the release of a is being delivered
	ended := make(chan error, 1)
	go func() {
		_, err := h.engine.End(ctx, id)
		ended <- err
	}()
	var endErr error
	answered := false
	select {
	case endErr = <-ended:
		answered = true
	case <-time.After(100 * time.Millisecond):
	}
	release()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := h.engine.Close(cctx); err != nil {
		t.Fatal(err)
	}
	h.engine = nil
	if !answered {
		select {
		case endErr = <-ended:
		case <-time.After(20 * time.Second):
			t.Fatal("end never answered")
		}
	}
	if endErr != nil {
		t.Fatalf("end: %v", endErr)
	}
	detached := map[string]bool{}
	for _, op := range envs.sent() {
		switch op.Request.Type {
		case envapi.RequestDetach:
			detached[op.Environment] = true
		case envapi.RequestCall:
			if detached[op.Environment] {
				t.Errorf("release of turn sent to %s after it was detached", op.Environment)
			}
		}
	}
	recs := h.records(id)
	var endStarted, sessionEnded uint64
	for _, r := range recs {
		switch r.Kind {
		case api.KindSessionEndStarted:
			endStarted = r.Sequence
		case api.KindSessionEnded:
			sessionEnded = r.Sequence
		}
	}
	if sessionEnded == 0 || sessionEnded != recs[len(recs)-1].Sequence {
		t.Errorf("records after session_ended: %v", kinds(recs))
	}
	for _, r := range ofKind(recs, api.KindEnvironmentCallStarted) {
		if r.Sequence > endStarted {
			t.Errorf("environment_call_started at %d after session_end_started at %d: %v", r.Sequence, endStarted, kinds(recs))
		}
	}
}

// A session ended and deleted while a turn-end release is delivered
// stays deleted when the release answers: the engine does not go on to
// call the session's other environments, and keeps running.
func TestDeleteDuringTurnEndRelease(t *testing.T) {
	h, envs, id, release := releaseInFlight(t)
	ctx := context.Background()
	<-envs.entered
	ended := make(chan error, 1)
	go func() {
		_, err := h.engine.End(ctx, id)
		ended <- err
	}()
	deleted := false
	select {
	case err := <-ended:
		// Ended while the release is out: delete it now.
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if err := h.engine.Delete(ctx, id); err != nil {
			t.Fatalf("delete: %v", err)
		}
		deleted = true
		release()
	case <-time.After(100 * time.Millisecond):
		release()
		if err := <-ended; err != nil {
			t.Fatalf("end: %v", err)
		}
	}
	if !deleted {
		if err := h.engine.Delete(ctx, id); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := h.engine.Close(cctx); err != nil {
		t.Fatal(err)
	}
	h.engine = nil
	for _, op := range envs.sent() {
		if op.Request.Type == envapi.RequestCall && op.Environment != "a" {
			t.Errorf("release sent to %s of a deleted session", op.Environment)
		}
	}
	if n, err := h.store.Next(ctx, id); err == nil && n > 1 {
		t.Errorf("the deleted session's journal holds records again (next %d)", n)
	}
}

// releaseInFlight creates a session with environments a and b and runs a
// turn; the turn-end release of a is held until release is called (the
// caller waits on envs.entered for its delivery).
func releaseInFlight(t *testing.T) (*harness, *gatedReleases, string, func()) {
	t.Helper()
	envs := &gatedReleases{held: "a", entered: make(chan struct{}, 1), gate: make(chan struct{})}
	var open sync.Once
	release := func() { open.Do(func() { close(envs.gate) }) }
	t.Cleanup(release)
	h := newHarness(t, Config{Environments: envs}, nil)
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{
		{Name: "a", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"},
		{Name: "b", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"},
	}})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	return h, envs, id, release
}
