package client_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestInterruptDuringDrain: while the server drains, an interrupt still
// reaches the turn the drain waits for. The turn fails cancelled and the
// drain completes without waiting for the turn's own end.
func TestInterruptDuringDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, srv := startSession(t, ctx)
	if _, err := s.Submit(ctx, api.UserInput{Message: `{"delay_ms":60000}`}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, api.KindModelCallStarted)
	// A stream opened before the drain sees the turn's end.
	failed := make(chan api.Event, 1)
	opened := make(chan struct{})
	go func() {
		first := true
		for ev, err := range s.Events(ctx, 0, client.Follow()) {
			if first {
				close(opened)
				first = false
			}
			if err != nil {
				break
			}
			if ev.EventType == api.KindTurnFailed || ev.EventType == api.KindTurnEnded {
				failed <- ev
				return
			}
		}
		close(failed)
	}()
	<-opened
	srv.Drain()
	closed := make(chan error, 1)
	go func() { closed <- srv.Close(ctx) }()
	if err := s.Interrupt(ctx); err != nil {
		t.Fatalf("interrupt while draining: %v", err)
	}
	f, ok := <-failed
	var fail api.Failure
	if !ok || f.EventType != api.KindTurnFailed || json.Unmarshal(f.Data, &fail) != nil || fail.Code != api.FailureCancelled {
		t.Fatalf("the turn ended with %s %s, want turn_failed cancelled", f.EventType, f.Data)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the drain did not complete after the interrupt")
	}
}
