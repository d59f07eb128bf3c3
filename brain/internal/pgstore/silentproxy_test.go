package pgstore_test

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// silentProxy forwards TCP connections to a database server. Silence
// makes every connection open at the time stop forwarding in both
// directions without closing it (a network that dropped them without a
// word: no reset, no FIN, so the server keeps its end too); connections
// accepted afterwards work.
type silentProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []*proxied
	wg    sync.WaitGroup

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
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := pgconn.NetworkAddress(cfg.Host, cfg.Port)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln}
	p.wg.Go(func() { p.accept(network, addr) })
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *silentProxy) accept(network, addr string) {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial(network, addr)
		if err != nil {
			client.Close()
			continue
		}
		c := &proxied{p: p, client: client, server: server}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Go(func() { c.pipe(server, client) })
		p.wg.Go(func() { c.pipe(client, server) })
	}
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
