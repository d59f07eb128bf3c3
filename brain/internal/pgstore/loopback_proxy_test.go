package pgstore

import (
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// LoopbackProxy listens on a loopback TCP port and, for each connection
// it accepts, dials the database server of dbURL. forward is given both
// ends and answers the two loops that carry bytes between them, client
// to server and server to client; each runs in a goroutine of its own.
// LoopbackProxy answers the URL of the database through the proxy. When
// t ends, the listener and every connection are closed and the loops
// are waited for.
func LoopbackProxy(t *testing.T, dbURL string, forward func(client, server net.Conn) (toServer, toClient func())) string {
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
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial(network, addr)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			toServer, toClient := forward(client, server)
			wg.Go(toServer)
			wg.Go(toClient)
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return urlThrough(t, dbURL, ln.Addr().String())
}

// urlThrough answers dbURL with its server replaced by the TCP address
// addr: host and port parameters of the query are dropped.
func urlThrough(t *testing.T, dbURL, addr string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	u.Host = addr
	return u.String()
}
