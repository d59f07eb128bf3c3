package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runBrief runs "brain args..." as a process of its own, for a command
// that exits by itself, and answers its exit status, stdout and stderr.
func runBrief(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), commandEnv+"=1", "BRAIN_ENV_TOKEN=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestSubcommandUsage: every command answers as "brain serve" does: -h
// prints its usage on stdout with status 0; a bad flag or an argument it
// does not take exits 2 with the usage on stderr and nothing on stdout.
func TestSubcommandUsage(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		flag string // one of its flags, which its usage lists
	}{
		{[]string{"serve"}, "-data-dir"},
		{[]string{"env", "workspace"}, "-root"},
		{[]string{"env", "docker"}, "-state"},
		{[]string{"env", "docker", "gc"}, "-older-than"},
		{[]string{"env", "python-uv"}, "-project"},
		{[]string{"conformance"}, "-profile"},
	} {
		name := strings.Join(c.cmd, " ")
		for _, h := range []string{"-h", "--help"} {
			code, stdout, stderr := runBrief(t, append(c.cmd, h)...)
			if code != 0 || !strings.Contains(stdout, c.flag) || stderr != "" {
				t.Errorf("brain %s %s: exit %d, stdout %q, stderr %q; want exit 0 with the usage on stdout alone", name, h, code, stdout, stderr)
			}
		}
		for _, bad := range [][]string{{"--no-such-flag"}, {"bogus"}} {
			code, stdout, stderr := runBrief(t, append(c.cmd, bad...)...)
			if code != 2 || !strings.Contains(stderr, c.flag) || !strings.Contains(stderr, strings.TrimLeft(bad[0], "-")) || stdout != "" {
				t.Errorf("brain %s %s: exit %d, stdout %q, stderr %q; want exit 2 naming %s with the usage on stderr alone", name, bad[0], code, stdout, stderr, bad[0])
			}
		}
	}
}
