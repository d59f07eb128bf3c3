package main

import (
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestUsageHidesToken: "environment -help", and the usage printed after a
// mistyped flag, never show the token NOTES_TOKEN holds; the variable
// still sets the token the server requires.
func TestUsageHidesToken(t *testing.T) {
	clitest.ServerToken(t, run, "NOTES_TOKEN", "notes environment serving on ", "/v1/operations")
}
