package docker

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// cuttingProxy relays the Engine API from a TCP address to the Engine and,
// once armed, cuts the next exec stream it relays after cutAfter.
type cuttingProxy struct {
	ln       net.Listener
	engine   string // unix socket path
	armed    atomic.Bool
	cutAfter time.Duration
	wg       sync.WaitGroup
}

func newCuttingProxy(t *testing.T, engine string) *cuttingProxy {
	t.Helper()
	u, err := url.Parse(engine)
	if err != nil || u.Scheme != "unix" {
		t.Skipf("the Engine is not on a unix socket (%s)", engine)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{ln: ln, engine: u.Path, cutAfter: 500 * time.Millisecond}
	p.wg.Add(1)
	go acceptEach(ln, &p.wg, p.relay)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// acceptEach serves every connection ln accepts with relay, each counted
// in wg, until ln is closed.
func acceptEach(ln net.Listener, wg *sync.WaitGroup, relay func(net.Conn)) {
	defer wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() { defer wg.Done(); relay(c) }()
	}
}

// relay forwards one connection (keep-alives are off, so one request);
// an exec start is cut when the proxy is armed.
func (p *cuttingProxy) relay(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	up, err := net.Dial("unix", p.engine)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(up, line); err != nil {
		return
	}
	cut := strings.HasPrefix(line, "POST ") && strings.Contains(line, "/exec/") &&
		strings.Contains(line, "/start") && p.armed.CompareAndSwap(true, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	if cut {
		select {
		case <-done:
		case <-time.After(p.cutAfter):
		}
		return
	}
	<-done
}

// An Engine connection lost in the middle of a command leaves its outcome
// unknown: the command ran, perhaps still runs, and no exit status came
// back. The answer is unknown, never a definite failure, and the command
// does not outlive its call.
func TestEngineStreamLostMidCommandIsUnknown(t *testing.T) {
	t.Parallel()
	real, _ := testEngine(t)
	proxy := newCuttingProxy(t, real.DaemonHost())
	h := proxiedHarness(t, proxy.ln.Addr().String())
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "true") // allocate

	proxy.armed.Store(true)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "echo started; sleep 20; echo late > late",
	}), nil))
	if r.Type != envapi.ReceiptUnknown {
		t.Errorf("execute whose Engine stream was lost = %+v, want unknown", r)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 20") {
		t.Errorf("the command outlived its call:\n%s", ps)
	}
}
