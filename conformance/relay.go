package conformance

import (
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"sync"
	"time"
)

// relay makes a case's fake Brain, which listens on loopback only,
// reachable from another host: it listens on every interface and copies
// each connection to the fake Brain byte for byte, so that a connection
// the fake Brain closes without answering (a lost acknowledgement) is
// closed on the provider's side the same way.
type relay struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startRelay relays every interface's connections on an unused port to
// the server at target (a base URL) and returns the base URL naming host
// and that port.
func startRelay(target, host string) (*relay, string, error) {
	u, err := neturl.Parse(target)
	if err != nil {
		return nil, "", fmt.Errorf("conformance: fake Brain URL %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, "", fmt.Errorf("conformance: listen for callbacks: %w", err)
	}
	r := &relay{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return r, "http://" + net.JoinHostPort(host, port), nil
}

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: let some close
			continue
		}
		if !r.track(in) {
			_ = in.Close()
			return
		}
		r.wg.Go(func() { r.pipe(in) })
	}
}

// track records c so that close can end it; false once the relay is
// closed.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

// pipe copies in to the fake Brain and back until either side closes,
// then closes both.
func (r *relay) pipe(in net.Conn) {
	defer r.untrack(in)
	defer in.Close()
	out, err := net.Dial("tcp", r.target)
	if err != nil {
		return
	}
	if !r.track(out) {
		_ = out.Close()
		return
	}
	defer r.untrack(out)
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
	_ = in.Close()
	_ = out.Close()
	<-done
}

// close stops accepting, ends every relayed connection and waits.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	_ = r.ln.Close()
	r.wg.Wait()
}
