package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// TestFollowAcrossARestart: a followed stream outlives its server's
// restart (a drain, a few seconds down, a start over the same data
// directory and address) and goes on with the events committed after it.
func TestFollowAcrossARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	first := braintest.Start(t, braintest.Options{DataDir: dir, Token: "restart-token"})
	c, err := client.New(first.URL, &client.Options{Token: "restart-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "before"}); err != nil {
		t.Fatal(err)
	}

	type item struct {
		ev  api.Event
		err error
	}
	events := make(chan item, 256)
	go func() {
		defer close(events)
		for ev, err := range s.Events(ctx, 0, client.Follow()) {
			events <- item{ev, err}
			if err != nil {
				return
			}
		}
	}()
	waitTurns := func(n int) {
		t.Helper()
		for ended := 0; ended < n; {
			select {
			case it, ok := <-events:
				if !ok {
					t.Fatalf("the followed stream ended after %d of %d turns", ended, n)
				}
				if it.err != nil {
					t.Fatalf("the followed stream failed after %d of %d turns: %v", ended, n, it.err)
				}
				if it.ev.EventType == api.KindTurnEnded {
					ended++
				}
			case <-ctx.Done():
				t.Fatalf("%d of %d turns followed", ended, n)
			}
		}
	}
	waitTurns(1)

	addr := strings.TrimPrefix(first.URL, "http://")
	first.Stop()
	time.Sleep(3 * time.Second) // down for a while, as a restart is
	braintest.Start(t, braintest.Options{DataDir: dir, Token: "restart-token", Addr: addr})
	if _, err := s.Send(ctx, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	waitTurns(1)
}
