package main

import (
	"testing"

	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, main) }

// TestCommandLineExitStatus: host -h prints its usage and exits 0; an
// unknown flag or an operand exits 2, and the usage never shows the
// token given in the environment.
func TestCommandLineExitStatus(t *testing.T) {
	clitest.ExitStatus(t, "host", "BRAIN_TOKEN=sekrit-token", clitest.Standard())
}

// TestFlagsRefused: a --timeout that leaves no time to run the turn, an
// empty --message, or a --url that is no absolute http(s) URL, is a
// command line host cannot run: it exits 2 naming the flag, rather than
// failing later with a deadline, a refused message or a connection error
// (and without the password a URL may hold).
func TestFlagsRefused(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // nothing is sent
	clitest.ExitStatus(t, "host", "BRAIN_TOKEN=sekrit-token", []clitest.Case{
		{Args: []string{"--url", nowhere, "--timeout", "0"}, Code: 2, Say: "--timeout 0s: want a positive duration"},
		{Args: []string{"--url", nowhere, "--timeout=-1m"}, Code: 2, Say: "--timeout -1m0s: want a positive duration"},
		{Args: []string{"--url", nowhere, "--message="}, Code: 2, Say: "--message is empty"},
		{Args: []string{"--url", "127.0.0.1:8080"}, Code: 2, Say: `--url "127.0.0.1:8080": want an absolute http:// or https:// URL`},
		{Args: []string{"--url", "ftp://127.0.0.1:8080"}, Code: 2, Say: `--url "ftp://127.0.0.1:8080": want an absolute http:// or https:// URL`},
		{Args: []string{"--url", "http://"}, Code: 2, Say: `--url "http:": want an absolute http:// or https:// URL`},
		{Args: []string{"--url", "http://127.0.0.1:8080/?x=1"}, Code: 2, Say: "--url \"http://127.0.0.1:8080/?x=1\": want a base URL, without a query"},
		{Args: []string{"--url", "https://user:sekrit-token@host.example/?x=1"}, Code: 2, Say: `--url "https://user:xxxxx@host.example/?x=1": want a base URL`},
		{Args: []string{"--url", "http://user:sekrit-token@\x7f/"}, Code: 2, Say: "--url: want an absolute http:// or https:// URL"},
	})
}
