package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandEnv, set in the environment of the test binary, makes it run as
// the brain command (main) with its arguments: the tests below start the
// real command as a process of its own.
const commandEnv = "BRAIN_TEST_RUN_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(commandEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// commandResult is how one run of the brain command ended.
type commandResult struct {
	code   int
	stderr string
	// served is set when it started serving; it was then sent SIGTERM.
	served bool
}

// runCommand runs "brain args..." as a process with the test's
// environment and env added. A server that starts is sent SIGTERM at once
// and reported as served.
func runCommand(t *testing.T, env []string, args ...string) commandResult {
	t.Helper()
	cmd, stderr, served, done := startCommand(t, env, args...)
	var res commandResult
	var err error
	select {
	case err = <-done:
	case <-served:
		res.served = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("brain %v neither served nor exited\n%s", args, stderr.String())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	res.stderr = stderr.String()
	return res
}

// TestServeRefusesTokenNoHeaderCarries: a token read with its line end
// (BRAIN_API_TOKEN=$(cat) of a CRLF file, a secret mounted with its
// newline), with white space at an end or with a control character can
// never arrive in an Authorization header, so every request would answer
// 401. "brain serve" refuses it as a setting (exit 2), naming the flag and
// the variable and not quoting the token, before it creates the data
// directory.
func TestServeRefusesTokenNoHeaderCarries(t *testing.T) {
	for _, tok := range []string{"sekrit-token\n", "sekrit-token\r\n", " sekrit-token", "sekrit-token\t", "sekrit\x7ftoken", "sekrit\x01token"} {
		dataDir := t.TempDir() + "/data"
		res := runCommand(t, []string{"BRAIN_API_TOKEN=" + tok}, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-workspace")
		if res.served || res.code != 2 || !strings.Contains(res.stderr, "--token (BRAIN_API_TOKEN)") || strings.Contains(res.stderr, "sekrit") {
			t.Errorf("token %q: served %v, exit %d, stderr %q; want exit 2 naming --token (BRAIN_API_TOKEN), without the token", tok, res.served, res.code, res.stderr)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token %q: the data directory was created (%v)", tok, err)
		}
	}
	// A token that headers carry serves.
	res := runCommand(t, []string{"BRAIN_API_TOKEN=sekrit-token"}, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-workspace")
	if !res.served || res.code != 0 {
		t.Errorf("a plain token: served %v, exit %d, stderr %q", res.served, res.code, res.stderr)
	}
}

// TestServeRefusesSavedTokenNoHeaderCarries: an operator.token file whose
// token holds a control character (a file edited by hand) would have
// every request answer 401; "brain serve" refuses it at start (exit 2),
// naming the file and not quoting the token, and leaves the file as it
// was.
func TestServeRefusesSavedTokenNoHeaderCarries(t *testing.T) {
	dataDir := t.TempDir() + "/data"
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-workspace"}
	// The first start generates and saves the token.
	if res := runCommand(t, nil, args...); !res.served || res.code != 0 {
		t.Fatalf("first start: served %v, exit %d, stderr %q", res.served, res.code, res.stderr)
	}
	for _, tok := range []string{"sekrit\x01token", "sekrit\x7ftoken", "sekrit\ntoken\n", "sekrit\u0085token"} {
		path := writeFile(t, dataDir, "operator.token", tok)
		res := runCommand(t, nil, args...)
		if res.served || res.code != 2 || !strings.Contains(res.stderr, path) || !strings.Contains(res.stderr, "control character") || strings.Contains(res.stderr, "sekrit") {
			t.Errorf("token file %q: served %v, exit %d, stderr %q; want exit 2 naming %s, without the token", tok, res.served, res.code, res.stderr, path)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != tok {
			t.Errorf("token file %q: now %q, %v; want it left as it was", tok, b, err)
		}
	}
}

// TestServeWorkspaceStartFailureSaysOnce: when the built-in workspace
// environment cannot start (its root is a file), "brain serve" exits 1
// with that one reason, and no error about closing what never started
// follows it to mislead the operator.
func TestServeWorkspaceStartFailureSaysOnce(t *testing.T) {
	root := writeFile(t, t.TempDir(), "root", "a file")
	res := runCommand(t, nil, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth", "--workspace-root", root)
	if res.served || res.code != 1 || !strings.Contains(res.stderr, "workspace environment") || !strings.Contains(res.stderr, root) {
		t.Fatalf("served %v, exit %d, stderr %q; want exit 1 naming the workspace root", res.served, res.code, res.stderr)
	}
	if strings.Contains(res.stderr, "level=ERROR") || strings.Contains(res.stderr, "closed network connection") {
		t.Errorf("stderr %q: an error besides the reason", res.stderr)
	}
}

// TestServeRefusesModelKeyNoHeaderCarries: OPENAI_API_KEY or
// ANTHROPIC_API_KEY read with a line end cannot be sent to the model
// provider; "brain serve" refuses it (exit 2) naming the variable, without
// quoting it, rather than serving and refusing every session's create.
func TestServeRefusesModelKeyNoHeaderCarries(t *testing.T) {
	for _, env := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		res := runCommand(t, []string{env + "=sekrit-key\r\n"}, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth", "--no-workspace")
		if res.served || res.code != 2 || !strings.Contains(res.stderr, env) || strings.Contains(res.stderr, "sekrit") {
			t.Errorf("%s with a line end: served %v, exit %d, stderr %q; want exit 2 naming %s without the key", env, res.served, res.code, res.stderr, env)
		}
	}
}

// TestServeRefusesUnsafeSealingKeyFile: a sealing key file others may
// read, or one too short to be a key, is a refused setting: exit 2 naming
// the flag and the variable, whether the file came from one or the other.
// A key file that does not exist is a file that cannot be read (exit 1).
func TestServeRefusesUnsafeSealingKeyFile(t *testing.T) {
	dir := t.TempDir()
	open := writeFile(t, dir, "open.key", strings.Repeat("ab", 32))
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	short := writeFile(t, dir, "short.key", "sekrit")
	// Nothing listens on port 1: a key that were accepted would fail on
	// the database instead.
	const db = "postgres://brain@127.0.0.1:1/brain?connect_timeout=1"
	for _, c := range []struct {
		file, say string
	}{
		{open, "chmod 600"},
		{short, "64 hex digits"},
	} {
		for _, how := range [][2][]string{
			{nil, {"--sealing-key-file", c.file}},
			{{"BRAIN_SEALING_KEY_FILE=" + c.file}, nil},
		} {
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir() + "/data", "--no-auth", "--no-workspace", "--database-url", db}, how[1]...)
			res := runCommand(t, how[0], args...)
			if res.served || res.code != 2 || !strings.Contains(res.stderr, "--sealing-key-file (BRAIN_SEALING_KEY_FILE)") ||
				!strings.Contains(res.stderr, c.say) || strings.Contains(res.stderr, "sekrit") {
				t.Errorf("%s by %v: served %v, exit %d, stderr %q; want exit 2 naming --sealing-key-file (BRAIN_SEALING_KEY_FILE) and saying %q", c.file, how, res.served, res.code, res.stderr, c.say)
			}
		}
	}
	res := runCommand(t, nil, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth", "--no-workspace",
		"--database-url", db, "--sealing-key-file", dir+"/missing.key")
	if res.served || res.code != 1 || !strings.Contains(res.stderr, "missing.key") {
		t.Errorf("a missing key file: served %v, exit %d, stderr %q; want exit 1 naming the file", res.served, res.code, res.stderr)
	}
}

// startCommand starts "brain args..." as a process with the test's
// environment and env added. It answers the process, its stderr as
// written so far, the URL it serves on once it says so, and its exit.
func startCommand(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, stderr *strings.Builder, urls <-chan string, done <-chan error) {
	t.Helper()
	cmd = exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), commandEnv+"=1"), env...)
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "Brain is serving on "); ok {
				serving <- url
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, stderr, serving, exited
}
