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

// TestFlagsRefused: a --timeout that leaves no time to run the turn, or
// an empty --message, is a command line client cannot run: it exits 2
// naming the flag, rather than failing later with a deadline or a
// refused message.
func TestFlagsRefused(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // nothing is sent
	clitest.ExitStatus(t, "client", "BRAIN_TOKEN=sekrit-token", []clitest.Case{
		{Args: []string{"--url", nowhere, "--timeout", "0"}, Code: 2, Say: "--timeout 0s: want a positive duration"},
		{Args: []string{"--url", nowhere, "--timeout=-1m"}, Code: 2, Say: "--timeout -1m0s: want a positive duration"},
		{Args: []string{"--url", nowhere, "--message="}, Code: 2, Say: "--message is empty"},
	})
}
