package main

import (
	"io"
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli"
	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// TestUsageHidesCredentials: "client -help", and the usage printed after
// a mistyped flag, list every flag with its default; the token and the
// model key may come from the environment, and their values must not be
// printed to a terminal or a CI log. They still take effect.
func TestUsageHidesCredentials(t *testing.T) {
	clitest.TurnCredentials(t, func(args []string, stderr io.Writer) (cli.Turn, error) {
		o, err := parse(args, stderr)
		return o.Turn, err
	})
}
