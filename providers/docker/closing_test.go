package docker

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// stopLine starts a command whose processes would run for a minute: its
// main process, a background child and a child that left the group with
// an empty environment.
const stopLine = "sleep 57 & setsid env -i sleep 58 & echo started; sleep 59"

// startLongCommand posts stopLine as an execute through url in the
// background, waits until it has started, and answers a channel that
// carries its receipt (or nothing, when the request failed).
func startLongCommand(t *testing.T, ctx context.Context, brain *envtest.Brain, c *envtest.Commands, url string) <-chan envapi.Receipt {
	t.Helper()
	seq := c.Reserve()
	g := brain.ToolGrant(c.Session, seq)
	answered := make(chan envapi.Receipt, 1)
	go func() {
		defer close(answered)
		_, _, resp, err := envtest.Post(ctx, nil, url, testToken, c.At(seq, envapi.Execute(tool(toolset.ToolCommand),
			mustJSON(toolset.CommandInput{Shell: stopLine}), nil, &g)))
		if err == nil && resp != nil {
			answered <- resp.Receipt
		}
	}()
	if _, err := brain.WaitFor(ctx, func(call envtest.Call) bool {
		return call.Session == c.Session && call.Sequence == seq && call.Method == "emit" && strings.Contains(string(call.Input), "started")
	}); err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	return answered
}

// longSleepers lists the processes of stopLine still running in ctr.
func longSleepers(t *testing.T, ctx context.Context, cli *client.Client, ctr string) []string {
	t.Helper()
	var out strings.Builder
	if _, err := runExec(ctx, cli, ctr, execSpec{
		Argv: []string{"ps", "-o", "args"}, User: DefaultUser, Dir: workspaceDir, Tag: "ps",
	}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "sleep 5") {
			left = append(left, l)
		}
	}
	return left
}

// Once Close has begun the provider serves nothing more (unavailable),
// and a command that runs is stopped (its execute answers cancelled) and
// dead, every process of it, by the time Close returns.
func TestCloseStopsCommandsAndRefusesOperations(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, _, err := h.p.store.get(bindingKey(c))
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	answered := startLongCommand(t, ctx, h.brain, c, h.url)

	closed := make(chan error, 1)
	go func() { closed <- h.p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while a command ran")
	}
	// Nothing of the command runs once Close has returned.
	if left := longSleepers(t, ctx, h.p.cli, st.resourceName()); len(left) != 0 {
		t.Fatalf("after Close the command still runs as %q", left)
	}
	r, ok := <-answered
	if !ok {
		t.Fatal("the running execute got no answer")
	}
	failure(t, r, envapi.CodeCancelled)
	if !strings.Contains(r.Message, "stopping") {
		t.Fatalf("message %q does not say the provider is stopping", r.Message)
	}

	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeUnavailable)
	failure(t, h.post(h.commands().Setup(nil)), envapi.CodeUnavailable)
	failure(t, h.post(c.Detach()), envapi.CodeUnavailable)
	failure(t, h.post(c.Teardown()), envapi.CodeUnavailable)
	if err := h.p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// The provider command stopped by its context (SIGTERM) stops the commands
// that run: their executes answer cancelled, and nothing of them runs on
// in the container once it has returned.
func TestCommandStopStopsRunningCommands(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "stop")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	pr, pw := io.Pipe()
	var logs strings.Builder
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider log:\n%s", logs.String())
		}
	})
	returned := make(chan int, 1)
	go func() {
		returned <- Command(ctx, []string{"--listen", "127.0.0.1:0", "--state", r.stateDir, "--profiles", r.profiles, "--token", testToken},
			pw, &lockedWriter{w: &logs})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("provider: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	_, rest, _ := strings.Cut(line, "listening on ")
	url, _, _ := strings.Cut(rest, " ")
	if rc := r.post(url, r.c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", rc)
	}
	answered := startLongCommand(t, r.ctx, r.brain, r.c, url)
	st, _, err := r.probe.store.get(bindingKey(r.c))
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}

	stop()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the provider did not stop within 20 s of its stop while a command ran")
	}
	rc, ok := <-answered
	if !ok {
		t.Fatal("the running execute got no answer")
	}
	failure(t, rc, envapi.CodeCancelled)
	if left := longSleepers(t, r.ctx, r.cli, st.resourceName()); len(left) != 0 {
		t.Fatalf("after the provider stopped the command still runs as %q", left)
	}
}

// lockedWriter serializes the writes of several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
