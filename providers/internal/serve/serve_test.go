package serve

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestParse: -h prints the usage on stdout with status 0; a bad flag or
// an argument the command does not take exits 2 with the usage on stderr.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		ok   bool
	}{
		{nil, 0, true},
		{[]string{"--listen", "127.0.0.1:0", "--token", "t"}, 0, true},
		{[]string{"-h"}, 0, false},
		{[]string{"--help"}, 0, false},
		{[]string{"--nope"}, 2, false},
		{[]string{"extra"}, 2, false},
		{[]string{"--token", "t", "extra"}, 2, false},
	} {
		var stdout, stderr bytes.Buffer
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&stderr)
		AddFlags(fs, "127.0.0.1:0")
		code, ok := Parse(fs, tc.args, &stdout)
		if code != tc.code || ok != tc.ok {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.args, code, ok, tc.code, tc.ok)
		}
		switch {
		case ok:
			if stdout.Len()+stderr.Len() != 0 {
				t.Errorf("Parse(%q) wrote stdout %q, stderr %q", tc.args, stdout.String(), stderr.String())
			}
		case tc.code == 0:
			if !strings.Contains(stdout.String(), "-listen") || stderr.Len() != 0 {
				t.Errorf("Parse(%q): stdout %q, stderr %q; want the usage on stdout alone", tc.args, stdout.String(), stderr.String())
			}
		default:
			if !strings.Contains(stderr.String(), "-listen") || stdout.Len() != 0 {
				t.Errorf("Parse(%q): stdout %q, stderr %q; want the usage on stderr alone", tc.args, stdout.String(), stderr.String())
			}
		}
		if fs.Output() != &stderr {
			t.Errorf("Parse(%q) left the flag set writing elsewhere than stderr", tc.args)
		}
	}
}

func flags(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := AddFlags(fs, "127.0.0.1:0")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestListen(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		token     string
		code      int
		stderr    string
	}{
		{"loopback without token", "", nil, "", 2, "refusing to serve without a token"},
		{"loopback with --no-auth", "", []string{"--no-auth"}, "", 0, "warning: serving without authentication"},
		{"--no-auth with a token", "", []string{"--no-auth", "--token", "t"}, "", 2, "contradicts"},
		{"--no-auth with a token from the environment", "env-token", []string{"--no-auth"}, "", 2, "contradicts"},
		{"white space token", "", []string{"--token", " \t"}, "", 2, "white space"},
		{"token from the environment", "env-token", nil, "env-token", 0, ""},
		{"flag beats environment", "env-token", []string{"--token", "flag"}, "flag", 0, ""},
		{"any address with a token", "", []string{"--listen", "0.0.0.0:0", "--token", "t"}, "t", 0, ""},
		{"any address without a token", "", []string{"--listen", "0.0.0.0:0"}, "", 2, "refusing to serve without a token"},
		{"any address with --no-auth", "", []string{"--listen", "0.0.0.0:0", "--no-auth"}, "", 2, "loopback only"},
		{"negative port", "", []string{"--listen", "127.0.0.1:-1", "--token", "t"}, "", 2, `t: --listen "127.0.0.1:-1": want a port from 0 to 65535`},
		{"port beyond 65535", "", []string{"--listen", "127.0.0.1:99999", "--token", "t"}, "", 2, `t: --listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{"no port", "", []string{"--listen", "127.0.0.1", "--no-auth"}, "", 2, `t: --listen "127.0.0.1": want host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(TokenEnv, tc.env)
			var stderr bytes.Buffer
			ln, token, code := flags(t, tc.args...).Listen(&stderr)
			if ln != nil {
				defer ln.Close()
			}
			if code != tc.code || token != tc.token || (ln == nil) != (code != 0) {
				t.Fatalf("Listen = %v, %q, %d; want token %q, code %d (stderr %s)", ln, token, code, tc.token, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
		})
	}
}

func TestRun(t *testing.T) {
	f := flags(t, "--no-auth")
	ln, _, code := f.Listen(io.Discard)
	if ln == nil {
		t.Fatalf("listen: %d", code)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	go func() { done <- f.Run(ctx, ln, h, pw, io.Discard, "test provider", "detail"); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := "test provider listening on http://" + ln.Addr().String() + " (detail)\n"
	if line != want {
		t.Errorf("start line %q, want %q", line, want)
	}
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if got := <-done; got != 0 {
		t.Errorf("exit status %d", got)
	}
}

// TestRunFailureNamesCommand: when serving fails, the message Run writes
// begins with the command's name, as its refusals do, and the exit status
// is 1.
func TestRunFailureNamesCommand(t *testing.T) {
	f := flags(t, "--no-auth")
	ln, _, code := f.Listen(io.Discard)
	if ln == nil {
		t.Fatalf("listen: %d", code)
	}
	ln.Close() // serving on it fails at once
	var stdout, stderr bytes.Buffer
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	if got := f.Run(t.Context(), ln, h, &stdout, &stderr, "test provider", "detail"); got != 1 {
		t.Errorf("exit status %d, want 1", got)
	}
	if msg := stderr.String(); !strings.HasPrefix(msg, "t: ") || !strings.Contains(msg, "closed") {
		t.Errorf("stderr %q; want the failure, beginning with the command's name", msg)
	}
}
