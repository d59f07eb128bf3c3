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

// TestCommandLineRefused: no token (neither --token nor LOOPS_TOKEN), or a
// --listen that is no host:port or names no port a listener can take,
// is a command line remote-agentloop cannot run:
// it exits 2 saying what is wrong, and serves nothing.
func TestCommandLineRefused(t *testing.T) {
	clitest.ExitStatus(t, "remote-agentloop", "LOOPS_TOKEN=", []clitest.Case{
		{Args: []string{"--listen", "127.0.0.1:0"}, Code: 2, Say: "a token is required (--token or LOOPS_TOKEN)"},
	})
	clitest.ExitStatus(t, "remote-agentloop", "LOOPS_TOKEN=sekrit-token", []clitest.Case{
		{Args: []string{"--listen", "8090"}, Code: 2, Say: `--listen "8090": `},
		{Args: []string{"--listen", "127.0.0.1:99999"}, Code: 2, Say: `--listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{Args: []string{"--listen", "127.0.0.1:-1"}, Code: 2, Say: `--listen "127.0.0.1:-1": want a port from 0 to 65535`},
		{Args: []string{"--listen", "0.0.0.0:0"}, Code: 2, Say: `--listen "0.0.0.0:0": this example binds loopback only`},
	})
}
