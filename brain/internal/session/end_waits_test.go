package session

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// gatedModel answers as the scripted model once gate is closed; entered
// receives a value when a call starts waiting.
type gatedModel struct {
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedModel) Call(ctx context.Context, req model.Request, d func(model.Delta)) (model.Result, error) {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return model.Result{}, context.Cause(ctx)
	}
	return model.Scripted{}.Call(ctx, req, d)
}

// held reports whether an operation holds session id in memory (a turn
// alone does not).
func held(e *Engine, id string) bool {
	e.mu.Lock()
	s := e.live[id]
	e.mu.Unlock()
	return s != nil && s.refs.Load() > 0
}

// End called while a turn's model call runs waits for the turn: the turn
// ends normally (it is not cancelled) before session_end_started, and End
// answers only after that.
func TestEndWaitsForRunningTurn(t *testing.T) {
	g := gatedModel{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return g, nil }}
	h := newHarness(t, Config{Models: models}, nil)
	var open sync.Once
	release := func() { open.Do(func() { close(g.gate) }) }
	t.Cleanup(release)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	turn, err := h.engine.Submit(ctx, id, api.UserInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	type ended struct {
		sum api.SessionSummary
		err error
	}
	done := make(chan ended, 1)
	go func() {
		sum, err := h.engine.End(ctx, id)
		done <- ended{sum, err}
	}()
	// Wait until End has taken the session; it must not answer while the
	// model call is held.
	deadline := time.Now().Add(20 * time.Second)
	for !held(h.engine, id) {
		select {
		case r := <-done:
			t.Fatalf("End answered (%+v, %v) while the turn's model call ran", r.sum, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("End never took the session")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("End answered (%+v, %v) while the turn's model call ran", r.sum, r.err)
	default:
	}
	if n := len(ofKind(h.records(id), api.KindSessionEndStarted)); n != 0 {
		t.Fatal("session_end_started committed while the turn ran")
	}
	release()
	r := <-done
	if r.err != nil || r.sum.Status != api.StatusEnded {
		t.Fatalf("end: %+v %v", r.sum, r.err)
	}
	recs := h.records(id)
	got := kinds(recs[turn-1:])
	want := []string{"turn_started", "activation_started", "model_call_started", "model_call_ended",
		"transcript_delta", "activation_ended", "turn_ended", "session_end_started", "session_ended"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records = %v, want %v", got, want)
	}
	if te := decode[turnEnded](t, ofKind(recs, api.KindTurnEnded)[0].Data); te.Sequence != turn || string(te.Result) != `"echo: hi"` {
		t.Fatalf("turn_ended = %+v", te)
	}
}

// Once session_end_started is committed, while an environment is still
// being detached, a new message is refused with ErrWrongState and nothing
// of a turn is recorded; the session then ends.
func TestEndingSessionRefusesMessages(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	detaching := make(chan struct{}, 1)
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "hangops"
	h.envs.hold = make(chan struct{})
	h.envs.onOp = func(op Operation) {
		if op.Request.Type == envapi.RequestDetach {
			detaching <- struct{}{}
		}
	}
	h.envs.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		sum, err := h.engine.End(ctx, id)
		if err == nil && sum.Status != api.StatusEnded {
			err = errors.New("end answered status " + string(sum.Status))
		}
		done <- err
	}()
	<-detaching
	if sum, err := h.engine.Summary(ctx, id); err != nil || sum.Status != api.StatusEnding {
		t.Fatalf("summary while detaching: %+v %v", sum, err)
	}
	if _, err := h.engine.Submit(ctx, id, api.UserInput{Message: "late"}); !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict {
		t.Fatalf("submit while ending: %v, want ErrWrongState", err)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "late"}); !errors.Is(err, ErrWrongState) {
		t.Fatalf("send while ending: %v, want ErrWrongState", err)
	}
	close(h.envs.hold)
	if err := <-done; err != nil {
		t.Fatalf("end: %v", err)
	}
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindTurnStarted)); n != 0 {
		t.Fatalf("%d turns recorded while ending: %v", n, kinds(recs))
	}
	if got := kinds(recs[len(recs)-4:]); !reflect.DeepEqual(got, []string{"session_end_started", "environment_detach_started", "environment_detach_ended", "session_ended"}) {
		t.Fatalf("end records = %v", got)
	}
}

// A delete that arrives while another delete's teardown is in flight is
// refused as a conflict: the provider is sent one teardown, not two, and
// the first delete completes.
func TestDeleteDuringTeardownIsRefused(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	if _, err := h.engine.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	tearing := make(chan struct{}, 2)
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "hangops"
	h.envs.hold = make(chan struct{})
	h.envs.onOp = func(op Operation) {
		if op.Request.Type == envapi.RequestTeardown {
			tearing <- struct{}{}
		}
	}
	h.envs.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- h.engine.Delete(ctx, id) }()
	<-tearing
	second := make(chan error, 1)
	go func() { second <- h.engine.Delete(ctx, id) }()
	select {
	case err := <-second:
		if !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict {
			t.Errorf("delete during another delete's teardown = %v, want a conflict", err)
		}
	case <-tearing:
		t.Error("a delete during another delete's teardown sent a second teardown")
	}
	close(h.envs.hold)
	if err := <-done; err != nil {
		t.Fatalf("first delete: %v", err)
	}
	if n := len(h.envs.opsOf(envapi.RequestTeardown)); n != 1 {
		t.Fatalf("%d teardowns sent, want 1", n)
	}
	if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("summary after delete: %v", err)
	}
}
