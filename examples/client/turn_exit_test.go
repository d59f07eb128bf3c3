package main

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestTurnFailureExitStatus runs the client as a process against a real
// Brain: a turn that fails, and one cancelled while it runs, make it exit
// 1 saying so on stderr (with the failure's code), so that a script or a
// CI job running it sees the turn did not succeed; a turn that ends exits
// 0.
func TestTurnFailureExitStatus(t *testing.T) {
	url := startBrain(t, nil)
	env := "BRAIN_TOKEN=" + brainToken
	clitest.ExitStatus(t, "client", env, []clitest.Case{
		{Args: []string{"--url", url, "--message", "hello"}, Code: 0},
		{Args: []string{"--url", url, "--message", `{"fail":{"code":"rate_limited","message":"slow down"}}`}, Code: 1, Say: "client: turn failed ("},
	})

	// Cancel the turn as soon as it runs: it replies only after a minute.
	ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
	defer stop()
	c, err := client.New(url, &client.Options{Token: brainToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancelled := make(chan error, 1)
	go func() { cancelled <- cancelRunning(ctx, c) }()
	clitest.ExitStatus(t, "client", env, []clitest.Case{
		{Args: []string{"--url", url, "--message", `{"reply":"too late","delay_ms":60000}`}, Code: 1, Say: "client: turn was cancelled (cancelled)"},
	})
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
}

// cancelRunning waits for a session with a running turn and interrupts it.
func cancelRunning(ctx context.Context, c *client.Client) error {
	for {
		list, err := c.Sessions.List(ctx)
		if err != nil {
			return err
		}
		for _, s := range list {
			if s.Status == api.StatusRunning {
				return c.Sessions.Open(s.SessionID).Interrupt(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
