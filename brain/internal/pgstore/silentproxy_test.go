package pgstore_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// silentProxy forwards TCP connections to a database server. Silence
// makes every connection open at the time stop forwarding in both
// directions without closing it (a network that dropped them without a
// word: no reset, no FIN, so the server keeps its end too); connections
// accepted afterwards work.
type silentProxy struct {
	mu    sync.Mutex
	conns []*proxied

	// While dropListen is set, a connection that sends LISTEN is
	// silenced from then on (the LISTEN never reaches the server), and
	// listensDropped counts it.
	dropListen     atomic.Bool
	listensDropped atomic.Int64
}

type proxied struct {
	p              *silentProxy
	client, server net.Conn
	silenced       atomic.Bool
}

func (c *proxied) close() {
	c.client.Close()
	c.server.Close()
}

// newSilentProxy starts a proxy to the database of dbURL and answers the
// URL of that database through it. The proxy and its connections end
// with t.
func newSilentProxy(t *testing.T, dbURL string) (*silentProxy, string) {
	t.Helper()
	p := &silentProxy{}
	u := pgstore.LoopbackProxy(t, dbURL, func(client, server net.Conn) (func(), func()) {
		c := &proxied{p: p, client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		return func() { c.pipe(server, client) }, func() { c.pipe(client, server) }
	})
	return p, u
}

// pipe copies src to dst until src ends, which ends both ends unless the
// connection was silenced. A silenced connection drops what it reads.
func (c *proxied) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && src == c.client && c.p.dropListen.Load() && bytes.Contains(buf[:n], []byte("LISTEN")) && !c.silenced.Swap(true) {
			c.p.listensDropped.Add(1)
		}
		if n > 0 && !c.silenced.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if !c.silenced.Load() {
				c.close()
			}
			return
		}
	}
}

// Silence stops every connection open now from forwarding anything.
func (p *silentProxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.silenced.Store(true)
	}
}
