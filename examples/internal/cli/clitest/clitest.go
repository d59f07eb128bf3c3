// Package clitest checks an example command's exit status and what it
// says on stderr, running the test binary as the command.
package clitest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runMainEnv, set in the environment of the test binary, makes it run as
// the command (main) with its arguments.
const runMainEnv = "EXAMPLE_RUN_MAIN"

// Main runs main when the test binary was started as the command, else
// the tests; call it from TestMain.
func Main(m *testing.M, main func()) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// Command answers the command (the test binary run as it) with args, to
// be started as the caller sees fit (killed when ctx ends); its Env holds
// what makes it the command, to be added to.
func Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// Case is a command line, the status it must exit with and what its
// stderr must say.
type Case struct {
	Args []string
	Code int
	Say  string
}

// Standard are the cases every example answers alike, but for the
// unexpected operand, which a command that serves needs beside what it
// serves: -h and --help print the usage (naming -token) and exit 0, an
// unknown flag or an operand exits 2 naming it.
func Standard(operand ...string) []Case {
	return []Case{
		{[]string{"-h"}, 0, "-token"},
		{[]string{"--help"}, 0, "-token"},
		{[]string{"--no-such-flag"}, 2, "no-such-flag"},
		{append(operand, "extra"), 2, `unexpected argument "extra"`},
	}
}

// TurnRefused are the cases a command that runs a turn (cli.Turn) answers
// alike: a --timeout that leaves no time to run the turn, an empty
// --message, or a --url that is no absolute http(s) base URL exits 2
// naming the flag (and quoting the URL without the password it may hold),
// before anything is sent.
func TurnRefused() []Case {
	const nowhere = "http://127.0.0.1:1"
	return []Case{
		{[]string{"--url", nowhere, "--timeout", "0"}, 2, "--timeout 0s: want a positive duration"},
		{[]string{"--url", nowhere, "--timeout=-1m"}, 2, "--timeout -1m0s: want a positive duration"},
		{[]string{"--url", nowhere, "--message="}, 2, "--message is empty"},
		{[]string{"--url", "127.0.0.1:8080"}, 2, `--url "127.0.0.1:8080": want an absolute http:// or https:// URL`},
		{[]string{"--url", "ftp://127.0.0.1:8080"}, 2, `--url "ftp://127.0.0.1:8080": want an absolute http:// or https:// URL`},
		{[]string{"--url", "http://"}, 2, `--url "http:": want an absolute http:// or https:// URL`},
		{[]string{"--url", "http://127.0.0.1:8080/?x=1"}, 2, "--url \"http://127.0.0.1:8080/?x=1\": want a base URL, without a query"},
		{[]string{"--url", "https://user:sekrit-token@host.example/?x=1"}, 2, `--url "https://user:xxxxx@host.example/?x=1": want a base URL`},
		{[]string{"--url", "http://user:sekrit-token@\x7f/"}, 2, "--url: want an absolute http:// or https:// URL"},
	}
}

// ExitStatus runs the command name once for each case, with secretEnv
// (NAME=value) in its environment, and fails t when it exits otherwise,
// does not say what the case wants, says "help requested" (the flag
// package's error, not a usage) or shows the secret's value.
func ExitStatus(t *testing.T, name, secretEnv string, cases []Case) {
	t.Helper()
	_, secret, _ := strings.Cut(secretEnv, "=")
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := Command(ctx, c.Args...)
		cmd.Env = append(cmd.Env, secretEnv)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		said := stderr.String()
		if code != c.Code || !strings.Contains(said, c.Say) || strings.Contains(said, "help requested") ||
			(secret != "" && strings.Contains(said, secret)) {
			t.Errorf("%s %v: exit %d, stderr %q; want exit %d saying %q", name, c.Args, code, said, c.Code, c.Say)
		}
	}
}
