package main

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
// the host command (main) with its arguments.
const runMainEnv = "EXAMPLE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestCommandLineExitStatus: host -h prints its usage and exits 0
// (it answered "flag: help requested" with status 1); an unknown flag or
// an operand exits 2 (it exited 1, like a failure of the work itself).
func TestCommandLineExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"-h"}, 0, "-token"},
		{[]string{"--help"}, 0, "-token"},
		{[]string{"--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1", "BRAIN_TOKEN=sekrit-token")
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
		if code != c.code || !strings.Contains(stderr.String(), c.say) || strings.Contains(stderr.String(), "help requested") ||
			strings.Contains(stderr.String(), "sekrit") {
			t.Errorf("host %v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr.String(), c.code, c.say)
		}
	}
}
