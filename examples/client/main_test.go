package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli"
	"github.com/brain-in-go/brain/providers/workspace"
)

// TestAgainstBrainServe runs the client against a Brain embedded
// in-process on a free port over a temporary data directory.
func TestAgainstBrainServe(t *testing.T) {
	url := startBrain(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("echo", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"--url", url, "--token", brainToken}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		expectLines(t, out.String(), "session ", "[1] session_creation_started", "> hello", "] turn_started", "] turn_ended",
			"transcript:", "  user: hello", "  assistant: echo: hello")
	})

	t.Run("streamed-tool-free-reply", func(t *testing.T) {
		var out bytes.Buffer
		script := `{"reply":"words arrive live","stream":true,"delay_ms":300}`
		if err := run(ctx, []string{"--url", url, "--token", brainToken, "--message", script, "--end"}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		expectLines(t, out.String(), "> "+script, "  live: words arrive live", "] turn_ended",
			"  user: "+script, "  assistant: words arrive live", "session ended")
	})

	t.Run("failed-turn", func(t *testing.T) {
		var out bytes.Buffer
		script := `{"fail":{"code":"rate_limited","message":"slow down"}}`
		err := run(ctx, []string{"--url", url, "--token", brainToken, "--message", script}, &out, &out)
		if err == nil || !strings.HasPrefix(err.Error(), "turn failed (") || !strings.Contains(err.Error(), "rate_limited: slow down") {
			t.Fatalf("err = %v, want the turn's failure\n%s", err, out.String())
		}
		expectLines(t, out.String(), "] model_call_failed", "] turn_failed", "transcript:")
	})

	t.Run("empty-message-creates-no-session", func(t *testing.T) {
		c, err := client.New(url, &client.Options{Token: brainToken})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		before, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = run(ctx, []string{"--url", url, "--token", brainToken, "--message", ""}, &out, &out)
		var ue cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--message") {
			t.Fatalf("err = %v, want a usage error naming --message\n%s", err, out.String())
		}
		after, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("%d sessions before, %d after: a session was created for a message that cannot be sent", len(before), len(after))
		}
	})

	t.Run("wrong-token", func(t *testing.T) {
		var out bytes.Buffer
		err := run(ctx, []string{"--url", url, "--token", "wrong"}, &out, &out)
		var ae *api.ApiError
		if !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
			t.Fatalf("err = %v", err)
		}
	})
}

// expectLines checks that each want starts (or, with a leading "]", is
// contained in) some line of out, in order.
func expectLines(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		found := false
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.HasPrefix(l, w) || (strings.HasPrefix(w, "]") && strings.Contains(l, w)) || (strings.HasPrefix(w, "[") && strings.Contains(l, w)) {
				found = true
				i++
				break
			}
		}
		if !found {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
	}
}

const brainToken = "example-operator-token"

// startBrain embeds Brain in-process as "brain serve" runs it: the
// scripted model, and the workspace environment as the default route;
// edit may change the configuration.
func startBrain(t *testing.T, edit func(*brain.Config)) string {
	t.Helper()
	ws, err := workspace.New(workspace.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const wsToken = "example-workspace-token"
	return braintest.Start(t, braintest.Options{Token: brainToken, Edit: edit,
		Environments: map[string]braintest.Environment{
			"workspace": {Handler: ws.Handler(wsToken), APIKey: wsToken, Default: true},
		}}).URL
}
