package httpapi

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// sink is where a stream's bytes go.
type sink interface {
	// write writes frames within the deadline.
	write(frames []*frame, deadline time.Time) error
	// finish ends the response and releases the connection; after a
	// failed write (broken) it closes the connection without ending the
	// body, so that the client sees the stream cut off, not complete.
	finish(broken bool)
}

// writerSink writes through the ResponseWriter; the handler goroutine
// stays until the stream ends.
type writerSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (ws *writerSink) write(frames []*frame, deadline time.Time) error {
	_ = ws.rc.SetWriteDeadline(deadline)
	for _, fr := range frames {
		if _, err := ws.w.Write(fr.b); err != nil {
			return err
		}
	}
	return ws.rc.Flush()
}

// finish leaves the end of the response to the handler, which aborts it
// when the stream broke.
func (ws *writerSink) finish(bool) {}

// connSink writes the chunked body of a hijacked HTTP/1.1 connection.
type connSink struct {
	c        net.Conn
	raw      syscall.RawConn // the socket, for non-blocking writes; nil for other connections (TLS)
	deadline time.Time       // the write deadline set on c; zero for none
	timeout  time.Duration   // Options.StreamWriteTimeout
}

// hijack takes the connection over and writes the response head, which
// names the heartbeat interval in milliseconds.
func hijack(w http.ResponseWriter, timeout time.Duration, heartbeatMs string) (*connSink, bool) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	_ = c.SetDeadline(time.Time{})
	if brw != nil && brw.Writer.Buffered() > 0 {
		_ = brw.Flush()
	}
	cs := &connSink{c: c, timeout: timeout}
	inner := c
	if lc, ok := c.(*limitConn); ok {
		inner = lc.Conn
	}
	// Only a plain socket: bytes written to it go to the client as they are.
	switch sc := inner.(type) {
	case *net.TCPConn:
		cs.raw, _ = sc.SyscallConn()
	case *net.UnixConn:
		cs.raw, _ = sc.SyscallConn()
	}
	head := make([]byte, 0, 240)
	head = append(head, "HTTP/1.1 200 OK\r\n"+
		heartbeatHeader+": "...)
	head = append(head, heartbeatMs...)
	head = append(head, "\r\n"+
		"Cache-Control: no-store\r\n"+
		"Connection: close\r\n"+
		"Content-Type: text/event-stream\r\n"+
		"Date: "...)
	head = time.Now().UTC().AppendFormat(head, http.TimeFormat)
	head = append(head, "\r\n"+
		"Transfer-Encoding: chunked\r\n"+
		"X-Accel-Buffering: no\r\n\r\n"...)
	if err := cs.writeBytes(head, time.Now().Add(timeout)); err != nil {
		c.Close() // the first write fails and ends the stream
	}
	return cs, true
}

func (cs *connSink) write(frames []*frame, deadline time.Time) error {
	return cs.writeBytes(appendChunk(nil, frames), deadline)
}

// writeBytes writes b within the deadline.
func (cs *connSink) writeBytes(b []byte, deadline time.Time) error {
	if len(b) == 0 {
		return nil
	}
	// Moving the deadline costs a timer update; a deadline still at least
	// half the write timeout away is kept (a stalled reader is then cut
	// off between half and all of the timeout), an earlier one (the
	// server stopping) is always set.
	if cs.deadline.IsZero() || deadline.Before(cs.deadline) || time.Until(cs.deadline) < cs.timeout/2 {
		_ = cs.c.SetWriteDeadline(deadline)
		cs.deadline = deadline
	}
	_, err := cs.c.Write(b)
	return err
}

// tryWrite writes what the socket takes of b now, with one write(2) that
// never waits, and answers how much that was.
func (cs *connSink) tryWrite(b []byte) (int, error) {
	if !cs.deadline.IsZero() && !time.Now().Before(cs.deadline) {
		// A deadline left by an earlier write has passed while the stream
		// was idle; this write does not wait, so needs none.
		_ = cs.c.SetWriteDeadline(time.Time{})
		cs.deadline = time.Time{}
	}
	var (
		n    int
		werr error
	)
	err := cs.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr != syscall.EINTR {
				return true
			}
		}
	})
	if n < 0 {
		n = 0
	}
	if err != nil {
		return n, err
	}
	if werr != nil && !errors.Is(werr, syscall.EAGAIN) {
		return n, werr
	}
	return n, nil
}

func (cs *connSink) finish(broken bool) {
	if !broken {
		_ = cs.c.SetWriteDeadline(time.Now().Add(stopGrace))
		_, _ = cs.c.Write([]byte("0\r\n\r\n"))
	}
	cs.c.Close()
}
