package client_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// clientGoroutines counts the goroutines that run the client's code or
// hold a connection of an HTTP client (the server's side runs neither).
func clientGoroutines() (int, string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var kept []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "clientGoroutines") {
			continue
		}
		if strings.Contains(s, "brain/brain/client.") || strings.Contains(s, "net/http.(*persistConn)") {
			n++
			kept = append(kept, s)
		}
	}
	return n, strings.Join(kept, "\n\n")
}

// TestNoGoroutineOutlivesItsWork follows a session's events, owns a turn
// whose ctx is cancelled and serves a host tool call that is under way,
// then closes the client: no goroutine of the client, and no connection
// it opened, is left behind.
func TestNoGoroutineOutlivesItsWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	before, _ := clientGoroutines()

	c2 := c.WithToken("tok")
	h, err := c2.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	h.Handle("wait", func(ctx context.Context, _ *client.ToolCall) (api.Outcome, error) {
		started <- struct{}{}
		<-ctx.Done()
		return api.Outcome{}, ctx.Err()
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c2, h, "wait")

	// A followed stream whose ctx is cancelled ends.
	fctx, fcancel := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		var last error
		for _, err := range s.Events(fctx, 0, client.Follow()) {
			if err != nil {
				last = err
			}
		}
		followed <- last
	}()

	// An owned send of a turn whose tool waits; its ctx is cancelled once
	// the tool runs.
	sctx, scancel := context.WithCancel(ctx)
	sent := make(chan error, 1)
	go func() {
		_, err := s.Send(sctx, api.UserInput{Message: toolScript("wait")})
		sent <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool never ran")
	}
	scancel()
	if err := <-sent; err == nil {
		t.Fatal("a cancelled Send answered no error")
	}
	fcancel()
	if err := <-followed; err == nil {
		t.Fatal("a cancelled stream ended without an error")
	}

	// A second call under way when the client closes; the session may
	// still be closing the interrupted turn.
	go func() {
		for ctx.Err() == nil {
			_, err := s.Send(context.Background(), api.UserInput{Message: toolScript("wait")})
			var ae *api.ApiError
			if !errors.As(err, &ae) || ae.Code != api.CodeConflict {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the second tool call never ran")
	}
	c2.Close()
	c.Close()

	var after int
	var stacks string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after, stacks = clientGoroutines(); after <= before {
			return
		}
	}
	t.Fatalf("%d goroutines of the client before, %d after it closed:\n%s", before, after, stacks)
}
