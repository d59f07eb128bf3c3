package pythonuv

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// statefulProcessEnv makes TestStatefulProviderProcess serve the provider;
// its value is the command's arguments as a JSON array.
const statefulProcessEnv = "PYTHONUV_TEST_STATEFUL_PROVIDER"

// TestStatefulProviderProcess is the provider process of
// TestBindingsSurviveAKill; it is skipped otherwise.
func TestStatefulProviderProcess(t *testing.T) {
	v := os.Getenv(statefulProcessEnv)
	if v == "" {
		t.Skip("runs only as a child process")
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(Command(context.Background(), args, os.Stdout, os.Stderr))
}

// startProvider runs brain env python-uv with args in a child process and
// returns its URL and the process.
func startProvider(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	raw, _ := json.Marshal(args)
	child := exec.Command(os.Args[0], "-test.run=^TestStatefulProviderProcess$")
	child.Env = append(os.Environ(), statefulProcessEnv+"="+string(raw))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &envtest.Buffer{}
	child.Stderr = logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider %v:\n%s", args, logs.String())
		}
	})
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	_, rest, found := strings.Cut(line, "http://")
	if err != nil || !found {
		t.Fatalf("start line %q: %v", line, err)
	}
	go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()
	return "http://" + strings.Fields(rest)[0], child
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// post sends cmd to url and returns the receipt.
func postTo(t *testing.T, url string, cmd envapi.Command) envapi.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, body, resp, err := envtest.Post(ctx, nil, url, "", cmd)
	if err != nil || resp == nil {
		t.Fatalf("post %s: status %d, err %v, body %s", cmd.Operation.Request.Type, status, err, body)
	}
	return resp.Receipt
}

// echoes runs the plain project on c's binding and checks its answer.
func echoes(t *testing.T, url string, c *envtest.Commands) {
	t.Helper()
	cmd := c.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000))
	if rc := postTo(t, url, cmd); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"n":1}}`) {
		t.Fatalf("execute: %s, want the echo", describe(rc))
	}
}

// TestBindingsSurviveAKill: with --state, a provider killed and started
// again serves the bindings set up before it died, still refuses a second
// setup of them, and still answers unavailable for one torn down.
func TestBindingsSurviveAKill(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	state := filepath.Join(t.TempDir(), "state")
	args := []string{"--listen", "127.0.0.1:0", "--no-auth", "--uv", uv, "--state", state,
		"--project", "plain=" + filepath.Join(root, "plain") + ":echo"}
	brain := envtest.NewBrain(t)
	kept := envtest.NewCommands("ses_kept", "python")
	gone := envtest.NewCommands("ses_gone", "python")
	kept.Brain, gone.Brain = brain, brain

	url, child := startProvider(t, args...)
	for _, c := range []*envtest.Commands{kept, gone} {
		if rc := postTo(t, url, c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
			t.Fatalf("setup: %s", describe(rc))
		}
	}
	echoes(t, url, kept)
	if rc := postTo(t, url, gone.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown: %s", describe(rc))
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	url, _ = startProvider(t, args...)
	echoes(t, url, kept)
	wantFailure(t, postTo(t, url, kept.Setup(nil)), envapi.CodeAlreadyExists)
	ex := gone.Execute(impl("plain"), json.RawMessage(`{}`), envtest.Millis(120_000))
	wantFailure(t, postTo(t, url, ex), envapi.CodeUnavailable)
	// A detached binding is forgotten by the next start too.
	if rc := postTo(t, url, kept.Detach()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("detach: %s", describe(rc))
	}
	p, err := New(fixtureConfig(uv, root), WithStateDir(state))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.bindings) != 0 {
		t.Errorf("after a teardown and a detach the state still holds %v", p.bindings)
	}
}

// TestDamagedStateIsRefused: a state file that is not a binding record
// stops the provider from starting, naming the file, rather than a binding
// being forgotten.
func TestDamagedStateIsRefused(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	state := t.TempDir()
	p, err := New(fixtureConfig(uv, root), WithStateDir(state))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.state.attach("ses_a/python/1"); err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	name := filepath.Join(state, bindingFileName("ses_a/python/1"))
	if err := os.WriteFile(name, []byte(`{"version":1,"key":"ses_a/py`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(fixtureConfig(uv, root), WithStateDir(state)); err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("New over a damaged binding file: %v, want an error naming %s", err, name)
	}
	// A temporary file of a write cut short is not a binding.
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, ".tmp-x.json-123"), []byte(`{"ver`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = New(fixtureConfig(uv, root), WithStateDir(state))
	if err != nil {
		t.Fatalf("New beside a temporary file: %v", err)
	}
	_ = p.Close()
	if _, err := os.Stat(filepath.Join(state, ".tmp-x.json-123")); !os.IsNotExist(err) {
		t.Errorf("the temporary file is still there: %v", err)
	}
}
