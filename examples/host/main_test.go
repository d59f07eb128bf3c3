package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/braintest"
)

const brainToken = "example-operator-token"

// TestAgainstBrainServe runs the host program against a Brain embedded
// in the test (brain.New, as "brain serve" assembles it): both
// tools run in this process and their results reach the transcript; a
// countdown longer than the tool deadline is stopped by its context and
// recorded as a timeout.
func TestAgainstBrainServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole Brain over loopback")
	}
	url := braintest.Start(t, braintest.Options{Token: brainToken, Edit: func(c *brain.Config) {
		c.Limits.MaxTool = 3 * time.Second
	}}).URL
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("both-tools", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"--url", url, "--token", brainToken}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		got := out.String()
		for _, want := range []string{
			"host host_", "session ses_",
			`tool_call_started`, `countdown {"left":2} (from tool `, `countdown {"left":1} (from tool `,
			`"outcome":{"status":"ok","value":{"sum":5}}`, `"outcome":{"status":"ok","value":"liftoff"}`,
			"assistant: [tool_use call_1 add", "assistant: [tool_use call_2 countdown",
			`user: [tool_result call_1 {"sum":5}]`, `user: [tool_result call_2 "liftoff"]`,
		} {
			if !strings.Contains(got, want) {
				t.Fatalf("output lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("deadline", func(t *testing.T) {
		var out bytes.Buffer
		msg := `{"tool_calls":[{"name":"countdown","input":{"seconds":30}}]}`
		start := time.Now()
		if err := run(ctx, []string{"--url", url, "--token", brainToken, "--message", msg}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("a 30 s countdown with a 3 s deadline took %v", d)
		}
		if got := out.String(); !strings.Contains(got, `"outcome":{"status":"timeout"}`) || strings.Contains(got, "liftoff") {
			t.Fatalf("output:\n%s", got)
		}
	})
}
