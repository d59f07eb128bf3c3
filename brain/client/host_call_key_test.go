package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestHostCallKeyOfMethodThatRecordsNothing: a host tool's Call of a
// method that records nothing, given an IdempotencyKey, is not sent as if
// no key were given (the key ignored, so that a caller who sends it again
// with the same key has it carried out again): the key goes to Brain,
// which takes one only with a method that records, and the call fails
// with Brain's invalid_request naming those methods, carried out never.
// Without a key it is carried out; a method that records takes the key.
func TestHostCallKeyOfMethodThatRecordsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		keyed, unkeyed, recorded error
		out                      json.RawMessage
	}
	done := make(chan result, 1)
	h.Handle("probe", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		var r result
		list := json.RawMessage(`{"operation":"list"}`)
		_, r.keyed = call.Call(ctx, "environments", list, client.IdempotencyKey("probe-list-1"))
		r.out, r.unkeyed = call.Call(ctx, "environments", list)
		_, r.recorded = call.Call(ctx, "emit", json.RawMessage(`{"event_type":"probed","data":{}}`), client.IdempotencyKey("probe-emit-1"))
		done <- r
		return client.OK("probed"), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "probe")
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("probe")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var ae *api.ApiError
	if !errors.As(r.keyed, &ae) || !errors.Is(r.keyed, api.ErrInvalidRequest) || !strings.Contains(ae.Message, "emit") {
		t.Errorf("keyed call of a method that records nothing = %v, want invalid_request naming the methods that take a key", r.keyed)
	}
	if r.unkeyed != nil || !strings.Contains(string(r.out), `"environments"`) {
		t.Errorf("unkeyed call = %s, %v", r.out, r.unkeyed)
	}
	if r.recorded != nil {
		t.Errorf("keyed emit = %v", r.recorded)
	}
}
