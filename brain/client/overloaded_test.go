package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// leaseLost is what a node of a cluster answers a write that waited on a
// turn while the node lost the session's lease: the write may have been
// carried out (its outcome belongs to the session's next owner).
const leaseLost = `{"code":"overloaded","message":"the server is overloaded or shutting down; retry later","retryable":true}`

// TestOverloadedWriteKeepsItsKey: Brain answers a keyed write 503
// overloaded also when the write may have been carried out (a node that
// lost the session's lease while the write ran, a storage commit whose
// outcome is unknown). Such a write fails with an UncertainError naming
// its key, still an overloaded *api.ApiError for errors.As (and
// api.ErrOverloaded for errors.Is), and the write
// sent again with that key is answered with the first's outcome: the
// message was answered once. Without the key the caller could only send
// the write again as a new request, and the message would run twice.
func TestOverloadedWriteKeepsItsKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	for _, async := range []bool{false, true} {
		g.losing(once(keyed(http.MethodPost, "/messages", http.StatusServiceUnavailable, leaseLost)))
		send := func(opts ...client.CallOption) error {
			if async {
				_, err := s.Submit(ctx, api.UserInput{Message: "once"}, opts...)
				return err
			}
			_, err := s.Send(context.Background(), api.UserInput{Message: "once"}, opts...)
			return err
		}
		err := send()
		var ue *client.UncertainError
		var ae *api.ApiError
		if !errors.As(err, &ue) || ue.Key == "" {
			t.Fatalf("message (async %v) answered overloaded after it ran: %v, want an UncertainError with the key", async, err)
		}
		if !errors.As(err, &ae) || ae.Code != api.CodeOverloaded || !ae.Retryable || !errors.Is(err, api.ErrOverloaded) {
			t.Fatalf("message (async %v): %v, want it to wrap the overloaded answer", async, err)
		}
		if err := send(client.IdempotencyKey(ue.Key)); err != nil {
			t.Fatalf("message (async %v) sent again with its key: %v", async, err)
		}
		waitIdle(t, ctx, s)
	}
	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr)
	if n := strings.Count(string(raw), "echo: once"); n != 2 {
		t.Fatalf("%d answers to the two messages, each carried out once", n)
	}
}
