package main

import (
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, main) }

// TestCommandLineExitStatus: client -h prints its usage and exits 0; an
// unknown flag or an operand exits 2, and the usage never shows the
// token given in the environment.
func TestCommandLineExitStatus(t *testing.T) {
	clitest.ExitStatus(t, "client", "BRAIN_TOKEN=sekrit-token", clitest.Standard())
}

// TestFlagsRefused: a --timeout that leaves no time to run the turn, an
// empty --message, or a --url that is no absolute http(s) URL, is a
// command line client cannot run: it exits 2 naming the flag, rather than
// failing later with a deadline, a refused message or a connection error
// (and without the password a URL may hold).
func TestFlagsRefused(t *testing.T) {
	clitest.ExitStatus(t, "client", "BRAIN_TOKEN=sekrit-token", clitest.TurnRefused())
}
