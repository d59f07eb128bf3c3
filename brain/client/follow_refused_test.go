package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestFollowEndingWhileRefusedCarriesTheAnswer: a followed stream that
// the server keeps refusing (503 overloaded while it drains) is tried
// again until ctx ends; the error it then yields carries the server's
// answer as well as ctx's, so that the caller can tell a server that
// refused it from one that never answered.
func TestFollowEndingWhileRefusedCarriesTheAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, srv := startSession(t, ctx)
	srv.Drain()
	for _, end := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			fctx, stop := context.WithCancel(ctx)
			time.AfterFunc(time.Second, stop)
			return fctx, stop
		}, context.Canceled},
	} {
		t.Run(end.name, func(t *testing.T) {
			fctx, stop := end.ctx()
			defer stop()
			var got error
			for ev, err := range s.Events(fctx, s.Summary.LastSequence, client.Follow()) {
				if err == nil {
					t.Fatalf("a draining server streamed %+v", ev)
				}
				got = err
			}
			var ae *api.ApiError
			if !errors.Is(got, end.want) || !errors.As(got, &ae) || !errors.Is(got, api.ErrOverloaded) {
				t.Fatalf("Follow refused while draining until ctx ended: %v, want %v carrying the overloaded answer", got, end.want)
			}
		})
	}
}
