package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An environment call whose start cannot be written is never sent, and
// its caller is told so: the journal's failure, refused as unavailable
// (the same request may be sent again), not an environment error of an
// unknown outcome, which would say the call may have run.
func TestEnvironmentCallStartNotWritten(t *testing.T) {
	h, store := refusingHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}}})
	ctx := context.Background()
	store.failing.Store(true)
	_, err := h.engine.CallEnvironment(ctx, id, "box", "work", json.RawMessage(`{}`))
	var ee *EnvironmentError
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, journal.ErrWrite) || errors.As(err, &ee) {
		t.Fatalf("call whose start was not written = %v, want an error wrapping ErrUnavailable and journal.ErrWrite", err)
	}
	if n := len(h.envs.opsOf(envapi.RequestCall)); n != 0 {
		t.Fatalf("%d calls sent though their start was not durable", n)
	}
	store.failing.Store(false)
	if _, err := h.engine.CallEnvironment(ctx, id, "box", "work", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the same call once writes succeed again: %v", err)
	}
}
