package pgstore

import (
	"bytes"
	be "encoding/binary"
	"net"
	"sync/atomic"
	"testing"
)

// poolerProxy forwards connections to a database server, as a connection
// pooler between Brain and the server does. Once armed, the first
// statement whose bytes hold the marker reaches the server, which runs
// and commits it; the proxy then drops the server's answer, as a pooler
// whose own connection to the server broke before the answer came
// through, and tells the client so with an error response of its own
// (PgBouncer answers 08P01 "server conn crashed?"), then closes the
// connection if the error is FATAL.
type poolerProxy struct {
	armed  atomic.Pointer[lostAnswer]
	caught atomic.Int64 // answers dropped
}

// lostAnswer is what the proxy answers in place of the server's answer to
// the statement that holds marker.
type lostAnswer struct {
	marker   []byte
	severity string
	code     string
	message  string
}

type pooled struct {
	p              *poolerProxy
	client, server net.Conn
	lose           atomic.Pointer[lostAnswer]
}

// newPoolerProxy starts a proxy to the database of dbURL and answers the
// URL of that database through it. The proxy ends with t.
func newPoolerProxy(t *testing.T, dbURL string) (*poolerProxy, string) {
	t.Helper()
	p := &poolerProxy{}
	u := LoopbackProxy(t, dbURL, func(client, server net.Conn) (func(), func()) {
		c := &pooled{p: p, client: client, server: server}
		return c.toServer, c.toClient
	})
	return p, u
}

// loseAnswerTo arms the proxy: the answer to the next statement holding
// marker is replaced by an error response of severity and SQLSTATE code.
func (p *poolerProxy) loseAnswerTo(marker, severity, code, message string) {
	p.armed.Store(&lostAnswer{marker: []byte(marker), severity: severity, code: code, message: message})
}

func (c *pooled) close() {
	c.client.Close()
	c.server.Close()
}

func (c *pooled) toServer() {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			if a := c.p.armed.Load(); a != nil && bytes.Contains(buf[:n], a.marker) && c.p.armed.CompareAndSwap(a, nil) {
				c.lose.Store(a)
			}
			if _, werr := c.server.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			c.close()
			return
		}
	}
}

// readyForQuery is the server's ReadyForQuery message outside a
// transaction block: the end of its answer to a statement or batch,
// committed.
var readyForQuery = []byte{'Z', 0, 0, 0, 5, 'I'}

func (c *pooled) toClient() {
	buf := make([]byte, 32<<10)
	var dropped []byte
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			if a := c.lose.Load(); a != nil {
				dropped = append(dropped, buf[:n]...)
				if bytes.HasSuffix(dropped, readyForQuery) {
					// The server committed and answered; the client gets
					// the pooler's error instead.
					out := errorResponse(a.severity, a.code, a.message)
					if a.severity != "FATAL" {
						out = append(out, readyForQuery...)
					}
					c.client.Write(out)
					c.p.caught.Add(1)
					if a.severity == "FATAL" {
						c.close()
						return
					}
					// The pooler kept both connections: the next
					// statements go through.
					c.lose.Store(nil)
					dropped = nil
				}
				continue
			}
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			c.close()
			return
		}
	}
}

// errorResponse encodes a protocol ErrorResponse message.
func errorResponse(severity, code, message string) []byte {
	var body []byte
	for _, f := range []struct {
		t byte
		v string
	}{{'S', severity}, {'V', severity}, {'C', code}, {'M', message}} {
		body = append(body, f.t)
		body = append(body, f.v...)
		body = append(body, 0)
	}
	body = append(body, 0)
	out := be.BigEndian.AppendUint32([]byte{'E'}, uint32(len(body)+4))
	return append(out, body...)
}
