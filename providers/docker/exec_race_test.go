package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// stoppingProxy relays the Engine API from a TCP address to the Engine
// and, once armed, stops the container of the next exec it is asked to
// start, between the exec's creation and its start. With answer empty the
// Engine answers the start; otherwise the proxy answers it as the Engine
// does when the stop lands while it starts the exec: the stream is opened
// and carries answer on stdout.
type stoppingProxy struct {
	ln      net.Listener
	engine  string // unix socket path
	cli     *client.Client
	armed   atomic.Bool
	answer  string
	stopped atomic.Int32
	wg      sync.WaitGroup
	// creates counts the exec creations relayed; once it passes
	// refuseAfter (when positive) every other one is answered 500.
	creates     atomic.Int32
	refuseAfter atomic.Int32
	// drain: the armed start reads the exec's stdin to its end before
	// it answers (for an exec that has stdin, which the client closes).
	drain atomic.Bool
	// hold: the next exec start is passed to the Engine, which starts
	// the exec, but its answer is held until release is closed (when the
	// test ends), and then the connection is closed instead.
	hold    atomic.Bool
	release chan struct{}
}

func newStoppingProxy(t *testing.T, cli *client.Client, answer string) *stoppingProxy {
	t.Helper()
	u, err := url.Parse(cli.DaemonHost())
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", cli.DaemonHost())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stoppingProxy{ln: ln, engine: u.Path, cli: cli, answer: answer, release: make(chan struct{})}
	p.wg.Add(1)
	go acceptEach(ln, &p.wg, p.relay)
	t.Cleanup(func() { ln.Close(); close(p.release); p.wg.Wait() })
	return p
}

// relay forwards one connection (keep-alives are off, so one request).
func (p *stoppingProxy) relay(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	if f := strings.Fields(line); len(f) > 1 && f[0] == "POST" && strings.HasSuffix(f[1], "/exec") {
		if n := p.refuseAfter.Load(); p.creates.Add(1) > n && n > 0 {
			_, _ = io.WriteString(c, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"+
				"Content-Length: 22\r\nConnection: close\r\n\r\n{\"message\":\"refused\"}")
			return
		}
	}
	if f := strings.Fields(line); len(f) > 1 && f[0] == "POST" && strings.Contains(f[1], "/exec/") &&
		strings.HasSuffix(f[1], "/start") && p.armed.CompareAndSwap(true, false) {
		id := f[1][strings.Index(f[1], "/exec/")+len("/exec/") : len(f[1])-len("/start")]
		ctx := context.Background()
		if info, err := p.cli.ContainerExecInspect(ctx, id); err == nil {
			if err := p.cli.ContainerKill(ctx, info.ContainerID, "KILL"); err == nil {
				p.stopped.Add(1)
			}
		}
		if p.answer != "" {
			req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)))
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"+
				"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
			if p.drain.CompareAndSwap(true, false) {
				_, _ = io.Copy(io.Discard, br)
			}
			_, _ = stdcopy.NewStdWriter(c, stdcopy.Stdout).Write([]byte(p.answer))
			return
		}
	}
	up, err := net.Dial("unix", p.engine)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(up, line); err != nil {
		return
	}
	if f := strings.Fields(line); len(f) > 1 && f[0] == "POST" && strings.HasSuffix(f[1], "/start") && p.hold.CompareAndSwap(true, false) {
		go func() { _, _ = io.Copy(up, br) }()
		<-p.release
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// A client that closes its side of an exec's stream (the end of
		// the command's stdin) still reads the output: the Engine is
		// told of the end and the relay goes on until the Engine closes.
		if _, err := io.Copy(up, br); err == nil {
			if cw, ok := up.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
		}
		done <- struct{}{}
	}()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// proxiedHarness is a harness whose provider reaches the Engine through
// the TCP address addr.
func proxiedHarness(t *testing.T, addr string) *harness {
	t.Helper()
	real, image := testEngine(t)
	cli := proxiedClient(t, addr)
	p, err := New(Config{Profiles: testProfiles(image), StateDir: t.TempDir(), Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	cleanupInstance(t, real, p.Instance())
	srv := httptest.NewServer(p.Handler(testToken))
	t.Cleanup(srv.Close)
	return &harness{t: t, p: p, url: srv.URL, brain: envtest.NewBrain(t)}
}

// proxiedClient is an Engine client that reaches the Engine through the
// TCP address addr, one request a connection.
func proxiedClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(
		client.WithHost("tcp://"+addr),
		client.WithHTTPClient(&http.Client{Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext:       (&net.Dialer{}).DialContext,
			// No HTTP/2: it would give the transport a TLS configuration,
			// and the client would then dial exec streams with TLS.
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
		}}),
		client.WithAPIVersionNegotiation(),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// A binding's container that stops between the creation of a command's
// exec and its start never ran the command, however the Engine says so:
// by refusing the start, or on the exec's stream with exit code 126. The
// container is started again and the command runs once, in it; its answer
// is what the command did, for the command tool and the file tools alike.
func TestContainerStoppedBeforeExecStartRunsCommandOnce(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]string{
		"start refused":         "",
		"refusal on the stream": "cannot exec in a stopped state: unknown\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			real, _ := testEngine(t)
			proxy := newStoppingProxy(t, real, answer)
			h := proxiedHarness(t, proxy.ln.Addr().String())
			c := h.commands()
			h.setup(c, "")
			h.shell(c, "true") // allocate

			proxy.armed.Store(true)
			out := h.shell(c, "echo run >> runs; cat runs")
			if proxy.stopped.Load() != 1 {
				t.Fatal("the container was not stopped before the exec's start")
			}
			if out.ExitCode != 0 || out.Stdout != "run\n" || out.Stderr != "" {
				t.Fatalf("command = %+v, want exit 0 and the output of one run", out)
			}

			proxy.armed.Store(true)
			r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "runs"}), nil))
			if proxy.stopped.Load() != 2 {
				t.Fatal("the container was not stopped before the exec's start")
			}
			if r.Type != envapi.ReceiptResult || !strings.Contains(string(r.Output), `run\n`) {
				t.Fatalf("read = %+v, want a result with the file's content", r)
			}
		})
	}
}

// A command that is not executable exits 126 in a running container, and
// that is its answer.
func TestCommandNotExecutableAnswers126(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	out := h.shell(c, "printf 'echo ran\\n' > script; ./script")
	if out.ExitCode != 126 || strings.Contains(out.Stdout, "ran") || !strings.Contains(out.Stderr, "Permission denied") {
		t.Fatalf("command = %+v, want exit 126 saying permission denied", out)
	}
	if out := h.shell(c, "echo again"); out.ExitCode != 0 || out.Stdout != "again\n" {
		t.Fatalf("next command = %+v", out)
	}
}

// A command stopped at its deadline whose output stream closed while it
// was killed, but whose last kill could not confirm that nothing is left
// (the Engine refused the kill's exec), answers the stop with that
// evidence; it does not wait for the stream's end a second time, which
// held the execute for ever.
func TestStopWhoseLastKillFailsReturns(t *testing.T) {
	t.Parallel()
	real, _ := testEngine(t)
	ctr := testContainer(t, Profile{})
	p := newStoppingProxy(t, real, "")
	// The command's exec and the first kill's go through; every later
	// kill is refused.
	p.refuseAfter.Store(2)
	cli := proxiedClient(t, p.ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		var out, errb bytes.Buffer
		code, err := runExec(ctx, cli, ctr, execSpec{Argv: []string{"sleep", "60"}, User: DefaultUser, Dir: workspaceDir, Tag: newResourceID()}, &out, &errb)
		got <- answer{code, err}
	}()
	select {
	case a := <-got:
		var stop *stopError
		if !errors.As(a.err, &stop) || !errors.Is(a.err, context.DeadlineExceeded) || stop.Cleanup == nil {
			t.Fatalf("runExec = %d, %v; want a stop by deadline with the failed kill as evidence", a.code, a.err)
		}
	case <-time.After(killBudget + 20*time.Second):
		t.Fatal("runExec did not return after its deadline and its kill budget")
	}
}

// A container stopped before the start of an exec that takes stdin, the
// Engine saying so on the exec's stream after the stdin was sent: the
// command runs again with its whole stdin, for the write tool (which
// would otherwise replace the file with nothing) and the command tool.
func TestContainerStoppedBeforeExecStartKeepsStdin(t *testing.T) {
	t.Parallel()
	real, _ := testEngine(t)
	proxy := newStoppingProxy(t, real, "cannot exec in a stopped state: unknown\r\n")
	h := proxiedHarness(t, proxy.ln.Addr().String())
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "echo old > f") // allocate

	proxy.drain.Store(true)
	proxy.armed.Store(true)
	r := h.post(c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "f", Content: "new content\n"}), nil))
	if proxy.stopped.Load() != 1 {
		t.Fatal("the container was not stopped before the exec's start")
	}
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("write = %+v, want a result", r)
	}
	if out := h.shell(c, "cat f"); out.Stdout != "new content\n" {
		t.Fatalf("after the write f holds %q, want the content written", out.Stdout)
	}

	proxy.drain.Store(true)
	proxy.armed.Store(true)
	stdin := "line of input\n"
	out := h.commandOutput(h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat", Stdin: &stdin}), nil)))
	if proxy.stopped.Load() != 2 {
		t.Fatal("the container was not stopped before the exec's start")
	}
	if out.ExitCode != 0 || out.Stdout != stdin {
		t.Fatalf("command = %+v, want its stdin on stdout", out)
	}
}

// A deadline that passes while the Engine starts a command's exec (the
// start reached the Engine, its answer did not reach the provider) still
// kills the command: the timeout answered is never one whose command goes
// on running.
func TestDeadlineDuringExecStartKillsCommand(t *testing.T) {
	t.Parallel()
	real, _ := testEngine(t)
	proxy := newStoppingProxy(t, real, "")
	h := proxiedHarness(t, proxy.ln.Addr().String())
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "true") // allocate

	proxy.hold.Store(true)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "echo ran > ran; sleep 60",
	}), envtest.Millis(1500)))
	failure(t, r, envapi.CodeTimeout)
	if proxy.hold.Load() {
		t.Fatal("the command's exec start was not held")
	}
	if out := h.shell(c, "cat ran"); out.Stdout != "ran\n" {
		t.Fatalf("the held exec did not run its command: %+v", out)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 60") {
		t.Fatalf("the command outlived its timeout:\n%s", ps)
	}
}
