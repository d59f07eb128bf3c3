package main

import (
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, main) }

// TestCommandLineExitStatus: remote-agentloop -h prints its usage and exits 0; an
// unknown flag or an operand exits 2, and the usage never shows the
// token given in the environment.
func TestCommandLineExitStatus(t *testing.T) {
	clitest.ExitStatus(t, "remote-agentloop", "LOOPS_TOKEN=sekrit-token", clitest.Standard("--listen", "127.0.0.1:0"))
}
