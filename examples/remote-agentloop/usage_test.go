package main

import (
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestUsageHidesToken: "remote-agentloop -help", and the usage printed
// after a mistyped flag, never show the token LOOPS_TOKEN holds; the
// variable still sets the token the server requires.
func TestUsageHidesToken(t *testing.T) {
	clitest.ServerToken(t, run, "LOOPS_TOKEN", "agentloops serving on ", "/v1/operations")
}
