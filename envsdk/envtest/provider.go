package envtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Operation is one POST /v1/operations a Provider received.
type Operation struct {
	// Raw is the body as sent.
	Raw []byte
	// Cmd is the decoded command.
	Cmd envapi.Command
	// Auth is the Authorization header.
	Auth string
}

// Provider serves an environment/v1 handler (usually an envsdk provider's)
// on loopback and records every operation before the handler sees it. It
// holds gates the handler's behaviours can wait on and counters of
// injected failures, so one recording provider serves every suite: Brain's
// end-to-end tests as much as a provider author's.
type Provider struct {
	// URL is the provider's base URL.
	URL string

	t    testing.TB
	h    http.Handler
	addr string
	done chan struct{} // closed when the test ends: every hold returns

	mu      sync.Mutex
	ops     []Operation
	changed chan struct{} // closed and replaced on every new operation
	gates   map[string]chan struct{}
	fails   map[string]int
	srv     *http.Server
}

// NewProvider serves h on a free loopback port until the test ends.
func NewProvider(t testing.TB, h http.Handler) *Provider { return NewProviderAt(t, h, "127.0.0.1:0") }

// NewProviderAt serves h on addr (such as the address of a provider an
// earlier part of the test stopped) until the test ends.
func NewProviderAt(t testing.TB, h http.Handler, addr string) *Provider {
	t.Helper()
	p := &Provider{t: t, h: h, addr: addr, done: make(chan struct{}), changed: make(chan struct{}),
		gates: map[string]chan struct{}{}, fails: map[string]int{}}
	p.Up()
	p.URL = "http://" + p.addr
	t.Cleanup(func() {
		close(p.done)
		p.Shutdown()
	})
	return p
}

// Up serves the provider on its address again after Down.
func (p *Provider) Up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(p.serve)}
	go func() { _ = srv.Serve(ln) }()
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
}

// Down stops serving and closes every connection: later connections to
// the address are refused.
func (p *Provider) Down() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Shutdown opens every gate and stops serving once the operations in
// flight answered (bounded by 10 s; the ones still running then are
// stopped: their contexts end).
func (p *Provider) Shutdown() {
	p.OpenAll()
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	}
}

// Done is closed when the test ends.
func (p *Provider) Done() <-chan struct{} { return p.done }

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if cmd, err := envapi.DecodeCommand(body); err == nil {
		p.mu.Lock()
		p.ops = append(p.ops, Operation{Raw: body, Cmd: cmd, Auth: r.Header.Get("Authorization")})
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.h.ServeHTTP(w, r)
}

// Received answers the recorded operations of type typ ("" for all) on
// environment env ("" for all), in arrival order.
func (p *Provider) Received(typ envapi.RequestType, env string) []Operation {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Operation
	for _, o := range p.ops {
		if (typ == "" || o.Cmd.Operation.Request.Type == typ) && (env == "" || o.Cmd.Operation.Environment == env) {
			out = append(out, o)
		}
	}
	return out
}

// WaitFor waits up to 30 s until at least n operations of typ on env
// arrived and answers them.
func (p *Provider) WaitFor(typ envapi.RequestType, env string, n int) []Operation {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if got := p.Received(typ, env); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			p.t.Fatalf("provider received %d %s operations on %q, want %d", len(p.Received(typ, env)), typ, env, n)
		}
	}
}

// Gate answers the channel behaviours named name wait on; it is closed by
// Open.
func (p *Provider) Gate(name string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gateLocked(name)
}

func (p *Provider) gateLocked(name string) chan struct{} {
	g, ok := p.gates[name]
	if !ok {
		g = make(chan struct{})
		p.gates[name] = g
	}
	return g
}

// Hold makes gate name closed again (held) if it was opened.
func (p *Provider) Hold(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gates[name] = make(chan struct{})
}

// Open releases whatever waits on gate name, now and later.
func (p *Provider) Open(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gateLocked(name)
	select {
	case <-g:
	default:
		close(g)
	}
}

// OpenAll opens every gate.
func (p *Provider) OpenAll() {
	p.mu.Lock()
	names := make([]string, 0, len(p.gates))
	for n := range p.gates {
		names = append(names, n)
	}
	p.mu.Unlock()
	for _, n := range names {
		p.Open(n)
	}
}

// FailNext makes the next n checks of ShouldFail(kind) answer true.
func (p *Provider) FailNext(kind string, n int) {
	p.mu.Lock()
	p.fails[kind] = n
	p.mu.Unlock()
}

// ShouldFail reports whether a behaviour of kind is to fail now, counting
// down what FailNext set.
func (p *Provider) ShouldFail(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fails[kind] > 0 {
		p.fails[kind]--
		return true
	}
	return false
}
