package httpapi

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connection bounds of the server that serves this API (brain serve):
//
//   - a request's headers must arrive within ReadHeaderTimeout of its
//     first byte, and a kept-alive connection is closed after IdleTimeout
//     without a request;
//   - a request body must arrive within Options.BodyReadTimeout (60 s by
//     default) of the handler starting to read it; when it does not, the
//     400 is answered at once and the connection closed;
//   - a request that fails authentication, and a request to a health
//     route, is answered without reading the body it announced, and its
//     connection is closed after the answer, so a client without a token
//     cannot hold a connection open by sending a body slowly or never;
//   - a request another handler refuses (4xx, 5xx) before it read a byte
//     of its body (for its path or its headers: an Idempotency-Key, a
//     Content-Type, a Prefer) is answered once at most drainBytes of the
//     body were discarded, for at most drainTimeout (drainAndClose), not
//     after all of it, and its connection is closed;
//   - the whole read of a request whose handler does not read its body is
//     bounded by ReadTimeout(body timeout), after which the connection is
//     closed;
//   - at most a fixed number of connections are open at once
//     (LimitListener); further clients wait in the listen backlog.
const (
	ReadHeaderTimeout     = 10 * time.Second
	IdleTimeout           = 120 * time.Second
	DefaultBodyTimeout    = 60 * time.Second
	DefaultMaxConnections = 1024
)

// ReadTimeout is the http.Server.ReadTimeout that backs the body timeout:
// headers plus body, plus a second of slack.
func ReadTimeout(body time.Duration) time.Duration {
	if body <= 0 {
		body = DefaultBodyTimeout
	}
	return ReadHeaderTimeout + body + time.Second
}

// closeUnread makes the server answer without waiting for a body the
// handler will not read: the connection's read deadline is set to now, so
// the server's attempt to drain the body fails at once, and the connection
// is closed after the answer.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// watchBody makes sw answer a request refused before its body was read
// as drainAndClose does: a request answered 4xx or 5xx for its path or
// its headers before the handler read a byte of the body it announced
// gets its answer within drainTimeout, and its connection is closed,
// instead of the server first reading what may be a large body, or one
// sent slowly or never.
// It answers the body it put in place of r's (nil when r announced none),
// which the caller must put back once the handler returned.
func watchBody(sw *statusWriter, r *http.Request) *watchedBody {
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	sw.req, sw.body = r, &watchedBody{ReadCloser: r.Body}
	r.Body = sw.body
	return sw.body
}

// watchedBody is a request body that records whether it was read.
type watchedBody struct {
	io.ReadCloser
	read atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.ReadCloser.Read(p)
}

// refuseUnread answers err to a request refused before it was
// authenticated, without reading its body (closeUnread).
func refuseUnread(w http.ResponseWriter, r *http.Request, err error) {
	closeUnread(w, r)
	WriteError(w, err)
}

// Bounds of drainAndClose.
const (
	drainBytes   = 1 << 20
	drainTimeout = time.Second
)

// drainAndClose closes the connection after the answer to an oversized
// body, first reading and discarding up to drainBytes of what the client
// is still sending, for at most drainTimeout: closing a socket with unread
// data resets the connection, and the client, still writing, would lose
// the 413 it is owed. A body beyond the bound is not waited for.
func drainAndClose(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.CopyN(io.Discard, r.Body, drainBytes)
	_ = rc.SetReadDeadline(time.Now())
}

// LimitListener answers a listener that keeps at most n accepted
// connections open at once: Accept waits while n are open.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConnections
	}
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
