package workspace

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

func TestCommandServesAndStops(t *testing.T) {
	t.Setenv(TokenEnv, "cli-token")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, code, stderr := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--root", t.TempDir(), "--allow", "echo")
	c := envtest.NewCommands("s1", "workspace")
	status, _, _, err := envtest.Post(ctx, nil, url, "wrong", c.Setup(nil))
	if err != nil || status != 401 {
		t.Fatalf("wrong token: %d %v", status, err)
	}
	_, _, resp, err := envtest.Post(ctx, nil, url, "cli-token", c.Setup(nil))
	if err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v %v", resp, err)
	}
	_, _, resp, err = envtest.Post(ctx, nil, url, "cli-token", c.Execute(tool("command"), []byte(`{"shell":"echo hi"}`), nil))
	if err != nil || resp.Receipt.Code != "not_allowed" {
		t.Fatalf("shell with --allow echo: %+v %v", resp, err)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit code %d, stderr %s", got, stderr.String())
	}
}

func TestCommandRejectsBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if got := Command(t.Context(), []string{"--listen", "127.0.0.1:0"}, &out, &errb); got != 2 {
		t.Errorf("missing --root: exit %d", got)
	}
	if got := Command(t.Context(), []string{"--root", t.TempDir(), "--release", "burn", "--listen", "127.0.0.1:0"}, &out, &errb); got != 2 {
		t.Errorf("bad release: exit %d", got)
	}
	// Zero bounds are refused by name, not read as the defaults (a
	// --timeout 0 is not "no timeout" either). A flag that is not refused
	// serves until the context ends: it has ended already.
	stopped, stop := context.WithCancel(t.Context())
	stop()
	for _, f := range [][]string{{"--output-limit", "0"}, {"--output-limit", "-1"}, {"--max-bytes", "0"}, {"--max-files", "0"}, {"--timeout", "0s"}} {
		errb.Reset()
		args := append([]string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth"}, f...)
		if got := Command(stopped, args, &out, &errb); got != 2 || !strings.Contains(errb.String(), f[0]) {
			t.Errorf("%s %s: exit %d, %q", f[0], f[1], got, errb.String())
		}
	}
}

func TestCommandRequiresTokenOrNoAuth(t *testing.T) {
	t.Setenv(TokenEnv, "")
	var out, errb bytes.Buffer
	if got := Command(t.Context(), []string{"--listen", "127.0.0.1:0", "--root", t.TempDir()}, &out, &errb); got != 2 {
		t.Fatalf("no token: exit %d, want 2 (stdout %q)", got, out.String())
	}
	if !strings.Contains(errb.String(), "--no-auth") || out.Len() != 0 {
		t.Errorf("no token: stdout %q stderr %q", out.String(), errb.String())
	}
	errb.Reset()
	if got := Command(t.Context(), []string{"--help"}, &out, &errb); got != 0 || !strings.Contains(out.String(), "-no-auth") || errb.Len() != 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q; want the usage on stdout", got, out.String(), errb.String())
	}
	out.Reset()
	// --no-auth serves, with a warning, and accepts any request.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, code, stderr := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--root", t.TempDir(), "--no-auth")
	_, _, resp, err := envtest.Post(ctx, nil, url, "", envtest.NewCommands("s1", "workspace").Setup(nil))
	if err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup without a token: %+v %v", resp, err)
	}
	if !strings.Contains(stderr.String(), "without authentication") {
		t.Errorf("no warning: %q", stderr.String())
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit code %d", got)
	}
}

// The allow-list names programs by base name, as a command's argv[0] is
// matched: a path given to --allow (or in Options.Commands) would match
// no program, and a provider started with it would refuse every command
// the operator meant to allow. It is refused at start, naming the flag.
func TestCommandRefusesAllowListPaths(t *testing.T) {
	stopped, stop := context.WithCancel(t.Context())
	stop()
	for _, allow := range []string{"/usr/bin/git", "bin/sh", "echo,./run", "..", "echo,."} {
		var out, errb bytes.Buffer
		args := []string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth", "--allow", allow}
		if got := Command(stopped, args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "--allow") {
			t.Errorf("--allow %s: exit %d, %q", allow, got, errb.String())
		}
		if _, err := New(Options{Root: t.TempDir(), Commands: strings.Split(allow, ",")}); !errors.Is(err, ErrOptions) {
			t.Errorf("New with Commands %q: %v, want %v", allow, err, ErrOptions)
		}
	}
	var out, errb bytes.Buffer
	args := []string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth", "--allow", "git, echo"}
	if got := Command(stopped, args, &out, &errb); got != 0 {
		t.Errorf("--allow 'git, echo': exit %d, %q", got, errb.String())
	}
}
