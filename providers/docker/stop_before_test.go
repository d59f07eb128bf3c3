package docker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// holdingEngine relays the Engine API over TCP. Once armed, it holds the
// next request its match takes, never passing it on to the Engine and
// never answering it, until the client gives up (or the test ends).
type holdingEngine struct {
	host  string
	mu    sync.Mutex
	match func(*http.Request) bool
	held  chan struct{}
}

func newHoldingEngine(t *testing.T) *holdingEngine {
	t.Helper()
	cli, _ := testEngine(t)
	u, err := url.Parse(cli.DaemonHost())
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", cli.DaemonHost())
	}
	relay := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", u.Path)
		}},
	}
	e := &holdingEngine{}
	ended := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		hold := e.match != nil && e.match(r)
		if hold {
			e.match = nil
			close(e.held)
		}
		e.mu.Unlock()
		if !hold {
			relay.ServeHTTP(w, r)
			return
		}
		select {
		case <-r.Context().Done():
		case <-ended:
		}
	}))
	t.Cleanup(func() { close(ended); srv.Close() })
	e.host = "tcp://" + srv.Listener.Addr().String()
	return e
}

// arm holds the next POST whose path match takes; the channel answered
// closes when it arrives.
func (e *holdingEngine) arm(match func(path string) bool) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held = make(chan struct{})
	e.match = func(r *http.Request) bool { return r.Method == http.MethodPost && match(r.URL.Path) }
	return e.held
}

// neverStarted fails the test unless r is a timeout saying that the
// command never started, and nothing of a process group being killed.
func neverStarted(t *testing.T, r envapi.Receipt) {
	t.Helper()
	failure(t, r, envapi.CodeTimeout)
	if !strings.Contains(r.Message, "never started") || strings.Contains(r.Message, "process group") {
		t.Fatalf("message %q, want one saying that the command never started", r.Message)
	}
}

// An execute whose deadline passes before its command started (while the
// Engine starts the binding's stopped container again, creates the
// command's exec, or while the command's cwd is checked) answers timeout
// saying that the command never started, and the command never runs.
func TestDeadlineBeforeCommandStartsSaysItNeverStarted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cwd  string
		stop bool // the container is stopped first
		hold func(ctr string) func(path string) bool
	}{
		{"container start", "", true, func(ctr string) func(string) bool {
			return func(p string) bool { return strings.HasSuffix(p, "/containers/"+ctr+"/start") }
		}},
		{"exec creation", "", false, func(ctr string) func(string) bool {
			return func(p string) bool { return strings.HasSuffix(p, "/containers/"+ctr+"/exec") }
		}},
		{"cwd check", "sub", false, func(string) func(string) bool {
			return func(p string) bool { return strings.Contains(p, "/exec/") && strings.HasSuffix(p, "/start") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newHoldingEngine(t)
			h := newHarnessOn(t, "", relayClient(t, e.host))
			c := h.commands()
			ctr := h.allocated(c)
			h.shell(c, "mkdir sub")
			if tc.stop {
				if err := h.p.cli.ContainerKill(context.Background(), ctr, "KILL"); err != nil {
					t.Fatal(err)
				}
			}
			held := e.arm(tc.hold(ctr))
			r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
				Shell: "echo ran > /workspace/ran", Cwd: tc.cwd,
			}), envtest.Millis(1500)))
			select {
			case <-held:
			default:
				t.Fatalf("the Engine call was not held; execute = %+v", r)
			}
			neverStarted(t, r)
			if out := h.shell(c, "cat ran 2>&1; cat f"); !strings.Contains(out.Stdout, "No such file") || !strings.HasSuffix(out.Stdout, "kept\n") {
				t.Fatalf("after the timeout: %+v; want no trace of the command and the workspace as it was", out)
			}
		})
	}
}

// An execute bounded by its profile's timeout whose deadline passes
// while the Engine updates the limits of a container an earlier provider
// process made (the profile changed between the two) answers timeout,
// the command never started, not a refusal of the Engine's; the next
// execute brings the container to the profile and runs.
func TestProfileTimeoutDuringLimitUpdateIsTimeout(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	stateDir := t.TempDir()
	h := newHarnessWith(t, stateDir, cli, Profiles{DefaultProfileName: {Image: image, MemoryMB: 64}})
	c := h.commands()
	h.allocated(c)
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	e := newHoldingEngine(t)
	h = newHarnessWith(t, stateDir, relayClient(t, e.host), Profiles{DefaultProfileName: {
		Image: image, MemoryMB: 96, Timeout: Duration(1500 * time.Millisecond),
	}})
	held := e.arm(func(p string) bool { return strings.HasSuffix(p, "/update") })
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran > ran"}), nil))
	select {
	case <-held:
	default:
		t.Fatalf("the update was not held; execute = %+v", r)
	}
	neverStarted(t, r)
	out := h.shell(c, "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; cat ran 2>&1")
	if !strings.HasPrefix(out.Stdout, "100663296\n") || !strings.Contains(out.Stdout, "No such file") {
		t.Fatalf("next execute = %+v; want the profile's 96 MiB and no trace of the stopped command", out)
	}
}

// A command with its own timeout_ms whose container was removed out of
// band answers resource_lost, as one without: the end of its timeout's
// context once it returned is no cancel.
func TestCommandTimeoutMsKeepsItsFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	if err := removeContainer(context.Background(), h.p.cli, name); err != nil {
		t.Fatal(err)
	}
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat f", TimeoutMs: 60000}), nil))
	failure(t, r, envapi.CodeResourceLost)
}

// A write whose deadline passes while it waits for another write of the
// binding to end answers timeout saying that it never started, and
// writes nothing.
func TestDeadlineWaitingForAnotherWriteSaysItNeverStarted(t *testing.T) {
	t.Parallel()
	e := newHoldingEngine(t)
	h := newHarnessOn(t, "", relayClient(t, e.host))
	c := h.commands()
	ctr := h.allocated(c)
	held := e.arm(func(p string) bool { return strings.HasSuffix(p, "/containers/"+ctr+"/exec") })
	first := h.postAsync(c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "a", Content: "a"}), envtest.Millis(4000)))
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the first write's exec was not held")
	}
	r := h.post(c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "b", Content: "b"}), envtest.Millis(1000)))
	neverStarted(t, r)
	<-first
	if out := h.shell(c, "cat b 2>&1"); !strings.Contains(out.Stdout, "No such file") {
		t.Fatalf("after the timeout: %+v; want no file b", out)
	}
}
