package ui_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallProxy forwards loopback TCP connections to a server. stall makes
// the connections that carry an event stream stop forwarding in both
// directions without closing, as a proxy that drops a connection silently
// does; connections opened afterwards are forwarded.
type stallProxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	// piece, when not zero, makes the proxy forward what the server sends
	// on event stream connections in pieces of at most piece bytes, gap
	// apart, as a slow network delivers it.
	piece int
	gap   time.Duration

	mu      sync.Mutex
	conns   []*proxied
	streams int // connections that carried an event stream request
	closed  chan struct{}
}

type proxied struct {
	client, server net.Conn
	mu             sync.Mutex
	stream         bool
	stalled        bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	return newPacedProxy(t, target, 0, 0)
}

// newPacedProxy is newStallProxy forwarding event streams in pieces of at
// most piece bytes, gap apart.
func newPacedProxy(t *testing.T, target string, piece int, gap time.Duration) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{t: t, ln: ln, target: strings.TrimPrefix(target, "http://"), piece: piece, gap: gap, closed: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			pc := &proxied{client: c, server: s}
			p.mu.Lock()
			p.conns = append(p.conns, pc)
			p.mu.Unlock()
			wg.Go(func() { p.pipe(pc, c, s, true) })
			wg.Go(func() { p.pipe(pc, s, c, false) })
		}
	})
	t.Cleanup(func() {
		close(p.closed)
		ln.Close()
		p.mu.Lock()
		for _, pc := range p.conns {
			pc.client.Close()
			pc.server.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *stallProxy) url() string { return "http://" + p.ln.Addr().String() }

// pipe copies src to dst until either closes; a stalled connection stops
// reading and writing until the proxy closes.
func (p *stallProxy) pipe(pc *proxied, src, dst net.Conn, fromClient bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		pc.mu.Lock()
		if fromClient && n > 0 && !pc.stream && bytes.Contains(bytes.ToLower(buf[:n]), []byte("text/event-stream")) {
			pc.stream = true
			p.mu.Lock()
			p.streams++
			p.mu.Unlock()
		}
		stalled, paced := pc.stalled, !fromClient && pc.stream && p.piece > 0
		pc.mu.Unlock()
		if stalled {
			<-p.closed
			return
		}
		for b := buf[:n]; len(b) > 0; {
			k := len(b)
			if paced {
				k = min(k, p.piece)
			}
			if _, werr := dst.Write(b[:k]); werr != nil {
				return
			}
			b = b[k:]
			if paced && len(b) > 0 {
				select {
				case <-time.After(p.gap):
				case <-p.closed:
					return
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

// stall stops the event stream connections open now and answers how many
// it stopped.
func (p *stallProxy) stall() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pc := range p.conns {
		pc.mu.Lock()
		if pc.stream && !pc.stalled {
			pc.stalled = true
			n++
		}
		pc.mu.Unlock()
	}
	return n
}

// streamCount answers how many connections carried an event stream.
func (p *stallProxy) streamCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams
}

// noteText reads what the page says about its event stream.
const noteText = `(document.getElementById('stream-note') || {}).textContent || ''`

// TestInspectorSilentStream follows a session through a proxy that stops
// forwarding the event stream without closing it: the page notices that
// no frame and no heartbeat came for a few heartbeat intervals, says so,
// reconnects from its cursor and shows the events committed meanwhile,
// each once. A stream that is idle but alive (heartbeats) is kept.
func TestInspectorSilentStream(t *testing.T) {
	b := newBrowser(t, 120*time.Second)
	const token = "silent-stream-token"
	const heartbeat = 500 * time.Millisecond
	srv := serveInProcess(t, token, heartbeat)
	proxy := newStallProxy(t, srv.url)
	id := srv.session(t)
	first := srv.emit(t, id, 3)

	b.login(proxy.url(), token)
	var ok bool
	b.eval(`location.hash = '#/s/`+id+`', true`, &ok)
	b.wait("follow the session", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.getElementById('live').dataset.state === 'following'`, first), 30*time.Second)

	// Idle with heartbeats, the stream is kept.
	time.Sleep(5 * heartbeat)
	var note string
	b.eval(noteText, &note)
	if n := proxy.streamCount(); n != 1 || note != "" {
		t.Fatalf("an idle stream with heartbeats: %d stream connections, note %q; want 1 and none", n, note)
	}

	if n := proxy.stall(); n != 1 {
		t.Fatalf("stalled %d stream connections, want 1", n)
	}
	stalledAt := time.Now()
	last := srv.emit(t, id, 5)
	b.wait("reconnect", fmt.Sprintf(`document.querySelector('#events tr[data-seq="%d"]') !== null && document.getElementById('live').dataset.state === 'following'`, last), 30*time.Second)
	t.Logf("the events committed after the stall showed after %v (heartbeat %v)", time.Since(stalledAt), heartbeat)
	b.eval(noteText, &note)
	if !strings.Contains(note, "silent") || !strings.Contains(note, "reconnected") {
		t.Errorf("stream note %q, want it to say the stream went silent and was reconnected", note)
	}
	if n := proxy.streamCount(); n != 2 {
		t.Errorf("%d stream connections, want 2", n)
	}

	var seqs []string
	b.eval(`Array.from(document.querySelectorAll('#events tbody tr'), (e) => e.dataset.seq)`, &seqs)
	want := make([]string, last)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if strings.Join(seqs, ",") != strings.Join(want, ",") {
		t.Errorf("events shown %v, want 1 to %d once each", seqs, last)
	}
	var progress []int
	b.eval(`Array.from(document.querySelectorAll('#timeline li[data-event="progress"]'), (e) => JSON.parse(e.querySelector('.summary').textContent).i)`, &progress)
	if fmt.Sprint(progress) != "[0 1 2 0 1 2 3 4]" {
		t.Errorf("timeline progress events %v, want [0 1 2 0 1 2 3 4]", progress)
	}
}
