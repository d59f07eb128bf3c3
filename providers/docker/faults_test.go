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
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// stallingEngine relays the Engine API over TCP and holds, unanswered,
// every request whose path contains stall; held says when the first one
// arrived.
func stallingEngine(t *testing.T, engineHost, stall string) (host string, held <-chan struct{}) {
	t.Helper()
	host, held, _ = gatedEngine(t, engineHost, stall)
	return host, held
}

// gatedEngine is stallingEngine whose held requests are passed on to the
// Engine, with every later one, once release is called.
func gatedEngine(t *testing.T, engineHost, stall string) (host string, held <-chan struct{}, release func()) {
	t.Helper()
	u, err := url.Parse(engineHost)
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", engineHost)
	}
	relay := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", u.Path)
		}},
	}
	ch := make(chan struct{})
	var once sync.Once
	gate := make(chan struct{})
	var opened sync.Once
	release = func() { opened.Do(func() { close(gate) }) }
	stalled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, stall) {
			relay.ServeHTTP(w, r)
			return
		}
		once.Do(func() { close(ch) })
		select {
		case <-r.Context().Done():
			return
		case <-stalled:
			return
		case <-gate:
		}
		relay.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(stalled); srv.Close() })
	return "tcp://" + srv.Listener.Addr().String(), ch, release
}

// A provider killed in the middle of a setup, after it recorded the
// binding but before it pinned the image, leaves a binding whose setup
// never finished. Restarted on the same state directory, the provider
// finishes it on first use: executes work, and teardown leaves nothing.
func TestSetupInterruptedByKillIsCompletedOnFirstUse(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "interrupted-setup")
	ctx, cli, image, stateDir, profiles, c, post, probe := r.ctx, r.cli, r.image, r.stateDir, r.profiles, r.c, r.post, r.probe

	// The setup is held while it reads the image's /workspace from a
	// probe container, and the provider is killed there.
	host, held := stallingEngine(t, cli.DaemonHost(), "/archive")
	child, url := startChild(t, stateDir, profiles, "DOCKER_HOST="+host)
	go func() { _, _, _, _ = envtest.Post(ctx, nil, url, testToken, c.Setup(nil)) }()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the setup never read the image")
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	key := bindingKey(c)
	if st, ok, err := probe.store.get(key); err != nil || !ok || st.Phase != phaseNew || st.ImageID != "" {
		t.Fatalf("state after the kill = %+v %v %v; want phase new without an image", st, ok, err)
	}
	if ctrs, _ := countLabelled(t, cli, bindingFilter(probe.Instance(), key)); ctrs != 1 {
		t.Fatalf("after the kill: %d containers of the binding, want its probe container", ctrs)
	}

	_, url = startChild(t, stateDir, profiles)
	for i := range 2 {
		r := post(url, c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hello > f; cat f"}), nil))
		if r.Type != envapi.ReceiptResult || !strings.Contains(string(r.Output), `hello\n`) {
			t.Fatalf("execute %d after the restart = %+v, want a result saying hello", i+1, r)
		}
	}
	if st, _, _ := probe.store.get(key); st == nil || st.Phase != phaseReady || st.ImageID != image {
		t.Fatalf("state after the first use = %+v; want phase ready with image %s", st, image)
	}
	if r := post(url, c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	if ctrs, vols := countLabelled(t, cli, instanceFilter(probe.Instance())); ctrs != 0 || vols != 0 {
		t.Fatalf("after teardown: %d containers, %d volumes of the instance remain", ctrs, vols)
	}
}

// A setup interrupted before it pinned the image, whose profile's image
// is gone by the first use, fails that use with allocation_failed saying
// why, and stays failed.
func TestSetupInterruptedWithImageGoneFailsClearly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	now := time.Now().UTC()
	st := &bindingState{
		Key: bindingKey(c), SessionID: c.Session, Environment: c.Environment, BindingSequence: 1,
		Resource: newResourceID(), Profile: "missing", Phase: phaseNew, CreatedAt: now, UpdatedAt: now,
	}
	if err := h.p.store.create(st); err != nil {
		t.Fatal(err)
	}
	h.p, _ = New(Config{Profiles: h.p.profiles, StateDir: h.p.store.dir, Client: h.p.cli})
	srv := httptest.NewServer(h.p.Handler(testToken))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	for range 2 {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil))
		failure(t, r, envapi.CodeAllocationFailed)
		if !strings.Contains(r.Message, "interrupted") || !strings.Contains(r.Message, "brain-docker-test:absent") {
			t.Fatalf("message %q does not say the setup was interrupted and the image is missing", r.Message)
		}
	}
	if got, _, _ := h.p.store.get(bindingKey(c)); got == nil || got.Phase != phaseFailed {
		t.Fatalf("state = %+v, want phase failed", got)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("%d containers, %d volumes left", ctrs, vols)
	}
}

// A binding whose pinned image was removed from the Engine before its
// first execute fails that execute with allocation_failed saying so, and
// stays failed.
func TestPinnedImageRemovedFailsClearly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	gone := "sha256:" + strings.Repeat("0f", 32)
	b, err := h.p.lookup(bindingKey(c))
	if err != nil {
		t.Fatal(err)
	}
	// The state as setup left it, with an image the Engine no longer has.
	if err := h.p.update(b, func(st *bindingState) { st.ImageID = gone }); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil))
		failure(t, r, envapi.CodeAllocationFailed)
		if !strings.Contains(r.Message, gone) || !strings.Contains(r.Message, "no longer on the Engine") {
			t.Fatalf("message %q does not say the pinned image is gone", r.Message)
		}
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("%d containers, %d volumes left", ctrs, vols)
	}
}

// allocated sets up a binding, allocates it with a first execute and
// returns the name of its container.
func (h *harness) allocated(c *envtest.Commands) string {
	h.t.Helper()
	h.setup(c, "")
	h.shell(c, "echo kept > f")
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		h.t.Fatalf("state: %v %v", ok, err)
	}
	return st.resourceName()
}

// A binding container paused out of band (docker pause) is resumed by
// the next execute, which works and finds the workspace as it was.
func TestPausedContainerIsResumed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	ctx := context.Background()
	if err := h.p.cli.ContainerPause(ctx, name); err != nil {
		t.Fatal(err)
	}
	if out := h.shell(c, "cat f"); out.Stdout != "kept\n" {
		t.Fatalf("execute on a paused container = %+v", out)
	}
	if err := h.p.cli.ContainerPause(ctx, name); err != nil {
		t.Fatal(err)
	}
	r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil))
	if r.Type != envapi.ReceiptResult || !strings.Contains(string(r.Output), "kept") {
		t.Fatalf("read on a paused container = %+v", r)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}

// A binding container stopped out of band (docker stop, or an Engine
// restart, which stops every container without a restart policy) is
// started again by the next execute, with the workspace as it was and a
// /tmp (the commands' HOME) the profile's user can still write, also when
// the image has no /tmp of its own.
func TestStoppedContainerIsStartedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	ctx := context.Background()
	if err := h.p.cli.ContainerKill(ctx, name, "KILL"); err != nil {
		t.Fatal(err)
	}
	if out := h.shell(c, "cat f"); out.Stdout != "kept\n" || out.Stderr != "" {
		t.Fatalf("execute on a stopped container = %+v", out)
	}
	if out := h.shell(c, "echo t > /tmp/t && echo h > \"$HOME/h\" && cat /tmp/t \"$HOME/h\""); out.ExitCode != 0 || out.Stdout != "t\nh\n" || out.Stderr != "" {
		t.Fatalf("/tmp after the container was started again: %+v", out)
	}
	if r := h.post(c.Detach()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("detach = %+v", r)
	}
	if out := h.shell(c, "echo t > /tmp/t && cat /tmp/t f"); out.ExitCode != 0 || out.Stdout != "t\nkept\n" || out.Stderr != "" {
		t.Fatalf("/tmp after a detach: %+v", out)
	}
}

// A binding container removed out of band (docker rm -f) while its
// volume stays is resource_lost, reported, never re-created, and stays
// so; teardown then removes the volume.
func TestRemovedContainerIsLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	if err := removeContainer(context.Background(), h.p.cli, name); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat f"}), nil))
		failure(t, r, envapi.CodeResourceLost)
		if !strings.Contains(r.Message, name) || !strings.Contains(r.Message, "tear the binding down") {
			t.Fatalf("message %q does not name the container and what to do", r.Message)
		}
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 1 {
		t.Fatalf("after the loss: %d containers, %d volumes; want the volume only", ctrs, vols)
	}
	if n := len(h.brain.Filter(func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && strings.Contains(string(call.Input), envapi.CodeResourceLost)
	})); n == 0 {
		t.Fatal("no resource_lost observation was reported")
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("after teardown: %d containers, %d volumes", ctrs, vols)
	}
}
