package session

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// slowCancels is an Environments whose setup registers the turn-end
// method release, whose executes return (leaving the tool open in the
// background) and whose cancels wait for gate.
type slowCancels struct {
	cancelling chan struct{}
	gate       chan struct{}

	mu  sync.Mutex
	log []string // request types in the order they were answered or entered
}

func (c *slowCancels) note(s string) {
	c.mu.Lock()
	c.log = append(c.log, s)
	c.mu.Unlock()
}

func (c *slowCancels) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	switch op.Request.Type {
	case envapi.RequestSetup:
		return envapi.AcceptedOnTurnEnd("release"), nil
	case envapi.RequestExecute:
		return envapi.Returned(nil), nil
	case envapi.RequestCancel:
		c.cancelling <- struct{}{}
		select {
		case <-c.gate:
		case <-ctx.Done():
			return envapi.Receipt{}, ctx.Err()
		}
		c.note("cancel answered")
		return envapi.Accepted(), nil
	case envapi.RequestCall:
		c.note("release " + string(op.Request.Input))
	}
	return envapi.Accepted(), nil
}

func (c *slowCancels) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// A turn interrupted while its background tool is open: the tool is
// cancelled, and the turn's release is sent only once the cancel (the
// tool's execution resources) has been answered, even when the turn's
// end is recorded first.
func TestReleaseWaitsForCancelOfInterruptedTool(t *testing.T) {
	envs := &slowCancels{cancelling: make(chan struct{}, 1), gate: make(chan struct{})}
	var open sync.Once
	release := func() { open.Do(func() { close(envs.gate) }) }
	t.Cleanup(release)
	dispatched := make(chan struct{}, 1)
	loops := map[string]agentloop.Func{"bg": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		if _, err := svc.Dispatch(ctx, []api.ToolInvocation{{CallID: "c1", Name: "echo", Input: json.RawMessage(`{}`)}}); err != nil {
			return api.TurnOutput{}, err
		}
		dispatched <- struct{}{}
		<-ctx.Done()
		// The loop returns once the cancel of its tool is out.
		<-envs.cancelling
		return api.TurnOutput{}, context.Cause(ctx)
	}}
	h := newHarness(t, Config{Environments: envs, Loops: testLoops(loops)}, nil)
	req := toolSession("returner")
	req.Agentloop = testLoop("bg")
	id := h.create(req)
	ctx := context.Background()
	turn, err := h.engine.Submit(ctx, id, api.UserInput{Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-dispatched
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, turn, api.KindTurnFailed)
	time.Sleep(100 * time.Millisecond)
	for _, s := range envs.sent() {
		if s != "cancel answered" {
			t.Errorf("%q sent while the interrupted tool's cancel was still being delivered", s)
		}
	}
	release()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := h.engine.Close(cctx); err != nil {
		t.Fatal(err)
	}
	h.engine = nil
	want := []string{"cancel answered", "release {\"sequence\":" + itoa(turn) + "}"}
	if got := envs.sent(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("environment saw %q, want %q", got, want)
	}
}
