package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// waitingLookup answers an engine whose sessions name an agentloop
// admitted on another node, and a session of it whose next turn finds the
// module unknown on this node while an admission holds the host: the
// turn's lookup of its loop waits behind that admission.
func waitingLookup(t *testing.T, limits session.Limits) (*session.Engine, string) {
	t.Helper()
	loops := newGatedShared()
	id, _ := loops.memShared.PutModule(context.Background(), answering("", `{"result":1}`))
	var cur atomic.Pointer[loophost.Host]
	cur.Store(openHost(t, loophost.Options{CacheDir: t.TempDir(), Shared: loops}))
	e := engineResolving(t, func(ctx context.Context, impl []byte) (agentloop.Func, error) {
		return cur.Load().Resolve(ctx, impl)
	}, limits)
	sid := create(t, e, id)
	// Another node of the cluster, which has not seen the module, takes
	// the session over while it admits another module.
	next := openHost(t, loophost.Options{CacheDir: t.TempDir(), Shared: loops})
	holdAdmission(t, next, loops)
	cur.Store(next)
	return e, sid
}

// A turn whose loop lookup waits for another admission longer than the
// lookup's bound fails as a turn the server could not run now: overloaded
// and retryable, not as a failure of the loop (agentloop_failed), which
// was never looked at.
func TestTurnWhoseLoopLookupPassesItsBoundIsOverloaded(t *testing.T) {
	loophost.SetLookupBound(t, 100*time.Millisecond)
	e, sid := waitingLookup(t, session.Limits{})
	_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
	var te *session.TurnError
	if !errors.As(err, &te) || te.Sequence == 0 || te.Code != api.CodeOverloaded || !te.Retryable || !errors.Is(err, loophost.ErrBusy) {
		t.Fatalf("a turn whose loop lookup passed its bound = %v, want a failed turn, overloaded and retryable, wrapping ErrBusy", err)
	}
}

// A turn's lookup of its loop, waiting for another admission, ends with
// the turn: an interrupt ends it as cancelled and the turn's deadline as
// timeout, at once, not once the lookup's bound has passed.
func TestTurnEndsItsLoopLookup(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits session.Limits
		stop   func(e *session.Engine, sid string) error
		want   string
	}{
		{"interrupted", session.Limits{}, func(e *session.Engine, sid string) error {
			// The turn has started once the session runs.
			for {
				sum, err := e.Summary(context.Background(), sid)
				if err != nil {
					return err
				}
				if sum.Status == api.StatusRunning {
					return e.Interrupt(context.Background(), sid)
				}
				time.Sleep(time.Millisecond)
			}
		}, api.FailureCancelled},
		{"past its deadline", session.Limits{MaxTurn: 200 * time.Millisecond}, nil, api.FailureTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, sid := waitingLookup(t, c.limits)
			answered := make(chan error, 1)
			go func() {
				_, err := e.Send(context.Background(), sid, api.UserInput{Message: "hi"})
				answered <- err
			}()
			if c.stop != nil {
				promptly(t, "Interrupt", func() {
					if err := c.stop(e, sid); err != nil {
						t.Errorf("stop: %v", err)
					}
				})
			}
			select {
			case err := <-answered:
				var te *session.TurnError
				if !errors.As(err, &te) || te.Sequence == 0 || te.Code != c.want {
					t.Errorf("the turn = %v, want a turn failed with %s", err, c.want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("the turn still waits for its loop after 5s")
			}
		})
	}
}

// A session create whose agentloop or Tool module is looked up behind
// another admission for longer than the lookup's bound is refused as the
// server being busy, retryable, and not as an invalid request: the same
// create may succeed once the admission ends.
func TestCreateWhoseLookupPassesItsBoundIsRetryable(t *testing.T) {
	loophost.SetLookupBound(t, 100*time.Millisecond)
	loops, tools := newGatedShared(), &memShared{}
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), CacheDir: t.TempDir(), Shared: loops, SharedTools: tools})
	loopID, _ := loops.memShared.PutModule(context.Background(), answering("", `{"result":1}`))
	toolID, _ := tools.PutModule(context.Background(), answering("run", `{"outcome":{"status":"ok","value":1}}`))
	holdAdmission(t, h, loops)
	e, err := session.New(session.Config{Store: journal.NewMemStore(), Loops: h.Resolve, Environments: h.Environments(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })

	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	for name, req := range map[string]api.CreateSessionRequest{
		"an agentloop": {Agentloop: &api.Agentloop{Implementation: json.RawMessage(`{"type":"brain_component","entrypoint":"turn","id":"` + loopID + `"}`)}},
		"a Tool": {Environments: []api.Environment{local}, Tools: []api.Tool{{Name: "t", Description: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{local.Name: {Implementation: impl(toolID, "")}}}}},
	} {
		req.Model = api.ModelConfig{Provider: "scripted", Name: "m"}
		_, err := e.Create(context.Background(), "", req)
		if !overloadedTurn(err, loophost.ErrBusy) || errors.Is(err, session.ErrInvalid) {
			t.Errorf("a create naming %s whose lookup passed its bound = %v, want a retryable overloaded TurnError wrapping ErrBusy", name, err)
		}
	}
}

// A Tool placement checked on a closed host fails as naming an agentloop
// there does: retryable and overloaded, wrapping ErrClosed, not as an
// implementation that cannot run.
func TestClosedHostRefusesAToolPlacementAsUnavailable(t *testing.T) {
	h, tid := toolHost(t, loophost.Options{})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := h.Environments(nil).ValidatePlacement(api.Environment{Name: "local", Driver: api.DriverBrain}, impl(tid, ""))
	if !overloadedTurn(err, loophost.ErrClosed) {
		t.Errorf("a Tool placement checked on a closed host = %v, want a retryable overloaded TurnError wrapping ErrClosed", err)
	}
}
