package docker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/docker/docker/client"
)

// TestChildProvider is not a test: it is the provider process that the
// restart tests start and kill.
func TestChildProvider(t *testing.T) {
	args := os.Getenv("BRAIN_DOCKER_CHILD_ARGS")
	if args == "" {
		t.Skip("runs only as a child of a restart test")
	}
	os.Exit(Command(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// startChild runs the provider in a child process and returns its URL;
// env is added to the child's environment.
func startChild(t *testing.T, stateDir, profiles string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProvider$")
	cmd.Env = append(append(os.Environ(), env...), "BRAIN_DOCKER_CHILD_ARGS="+strings.Join([]string{
		"--listen", "127.0.0.1:0", "--state", stateDir, "--profiles", profiles, "--token", testToken,
	}, "\x1f"))
	var logs bytes.Buffer
	cmd.Stderr = &logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child provider log:\n%s", logs.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child provider: %v", err)
	}
	_, rest, ok := strings.Cut(line, "listening on ")
	url, _, _ := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(url, "http://") {
		t.Fatalf("child provider said %q", line)
	}
	return cmd, url
}

// A provider killed with SIGKILL in the middle of an execute, then
// restarted on the same state directory, cancels that execute's process
// group and tears down everything it created.
func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "restart")
	ctx, cli, stateDir, profiles, brain, c, post, probe := r.ctx, r.cli, r.stateDir, r.profiles, r.brain, r.c, r.post, r.probe
	child, url := startChild(t, stateDir, profiles)
	if r := post(url, c.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", r)
	}
	seq := c.Reserve()
	g := brain.ToolGrant(c.Session, seq)
	go func() { // answered never: the provider dies
		_, _, _, _ = envtest.Post(ctx, nil, url, testToken, c.At(seq, envapi.Execute(tool(toolset.ToolCommand),
			mustJSON(toolset.CommandInput{Shell: "(sleep 59; echo late > late) & echo started; sleep 60"}), nil, &g)))
	}()
	if _, err := brain.WaitFor(ctx, func(call envtest.Call) bool {
		return call.Sequence == seq && call.Method == "emit" && strings.Contains(string(call.Input), "started")
	}); err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	key := bindingKey(c)
	st, ok, err := probe.store.get(key)
	if err != nil || !ok || st.Phase != phaseReady {
		t.Fatalf("state after the kill = %+v %v %v", st, ok, err)
	}
	ps := func() string {
		var out strings.Builder
		if _, err := runExec(ctx, cli, st.resourceName(), execSpec{
			Argv: []string{"ps", "-o", "args"}, User: DefaultUser, Dir: workspaceDir, Tag: "ps",
		}, &out, &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := ps(); !strings.Contains(out, "sleep 60") {
		t.Fatalf("the orphaned command is not running after the kill:\n%s", out)
	}

	_, url = startChild(t, stateDir, profiles)
	// The restarted provider's gc at start kept the live binding.
	if ctrs, vols := countLabelled(t, cli, bindingFilter(probe.Instance(), key)); ctrs != 1 || vols != 1 {
		t.Fatalf("after restart: %d containers, %d volumes", ctrs, vols)
	}
	if r := post(url, c.Cancel(seq)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel after restart = %+v", r)
	}
	if out := ps(); strings.Contains(out, "sleep 5") || strings.Contains(out, "sleep 60") {
		t.Fatalf("cancel after restart left processes:\n%s", out)
	}
	if r := post(url, c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown after restart = %+v", r)
	}
	if ctrs, vols := countLabelled(t, cli, instanceFilter(probe.Instance())); ctrs != 0 || vols != 0 {
		t.Fatalf("after teardown: %d containers, %d volumes of the instance remain", ctrs, vols)
	}
	if data, err := os.ReadFile(probe.store.path(key)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("state after teardown: %s %v, want none", data, err)
	}
}

// killRig is what a test of a provider killed and started again uses: the
// Engine with the test image, a state directory and profiles file for the
// provider's child processes, a fake Brain and the commands of one
// binding, and post, which sends a command and fails the test unless it
// is answered 200.
type killRig struct {
	ctx                       context.Context
	cli                       *client.Client
	image, stateDir, profiles string
	probe                     *Provider // on the state directory, for its instance and store
	brain                     *envtest.Brain
	c                         *envtest.Commands
	post                      func(url string, cmd envapi.Command) envapi.Receipt
}

func newKillRig(t *testing.T, session string) *killRig {
	t.Helper()
	cli, image := testEngine(t)
	dir := t.TempDir()
	r := &killRig{cli: cli, image: image, stateDir: filepath.Join(dir, "state"), profiles: filepath.Join(dir, "profiles.json")}
	if err := os.WriteFile(r.profiles, mustJSON(Profiles{"default": {Image: image}}), 0o600); err != nil {
		t.Fatal(err)
	}
	probe, err := newProvider(Config{StateDir: r.stateDir, Client: cli}, false)
	if err != nil {
		t.Fatal(err)
	}
	r.probe = probe
	cleanupInstance(t, cli, probe.Instance())
	r.brain = envtest.NewBrain(t)
	r.c = envtest.NewCommands(session, "box")
	r.c.Brain = r.brain
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	r.post = func(url string, cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(ctx, nil, url, testToken, cmd)
		if err != nil || status != http.StatusOK {
			t.Fatalf("POST %s: %d %v %s", cmd.Operation.Request.Type, status, err, body)
		}
		return resp.Receipt
	}
	return r
}
