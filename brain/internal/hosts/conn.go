package hosts

import (
	"context"
	"errors"
	"fmt"
)

// Conn is a host's commands connection. The transport writes every frame
// it takes from Frames to the host, once, reports how the write ended
// (Frame.Wrote) and calls Close when the connection ends.
//
// Frames is not a queue: a command is handed to the transport directly,
// and its sender knows whether the transport took it (it may have reached
// the host) or the connection ended first (it was not sent). Nothing is
// ever left behind for another connection.
type Conn struct {
	// ID names the connection (for HostSuspend).
	ID     string
	r      *Registry
	h      *host
	frames chan Frame
	done   chan struct{}
	// ended is set (under the registry's lock) when the connection ends.
	ended bool
	// displaced is set (before done closes) when a newer connection
	// replaced this one.
	displaced bool
	// waiting counts the frames being offered to the transport (under
	// the registry's lock).
	waiting int
	// cancelling counts the cancel_tool commands being written to the
	// connection, from the moment their cancel operation named the
	// call until the write's end (under the registry's lock).
	cancelling int
}

// errConnEnded reports a frame that was not sent because its connection
// ended first.
var errConnEnded = errors.New("hosts: the commands connection ended before the command was written")

// Displaced reports, once Done is closed, whether a newer connection of
// the same host replaced this one.
func (c *Conn) Displaced() bool {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.displaced
}

// Frame is one encoded HostCommand for the transport to write once.
type Frame struct {
	// Data is the HostCommand's JSON.
	Data []byte
	conn *Conn
	// wrote receives the write's result when a sender waits for it
	// (buffered; nil when none does).
	wrote chan error
}

// Wrote reports how writing the frame ended: nil once it was written in
// full, or the write's error. The transport calls it once for every frame
// it took. A write that failed may have reached the host in part or in
// full, so the command's outcome is unknown; it also ends the connection,
// whose stream no longer holds whole frames.
func (f Frame) Wrote(err error) {
	if err != nil && f.conn != nil {
		f.conn.Close()
	}
	if f.wrote != nil {
		select {
		case f.wrote <- err:
		default:
		}
	}
}

// Frames delivers the encoded HostCommand frames to write. A frame taken
// from it counts as sent.
func (c *Conn) Frames() <-chan Frame { return c.frames }

// Done is closed when the connection ends: displaced by a newer one,
// closed by its transport, suspended or by Registry.Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Connect opens host id's commands connection, displacing the current
// one.
func (r *Registry) Connect(id string) (*Conn, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	h := r.lookupLocked(id)
	if h == nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("host %s: %w", id, ErrUnauthorized)
	}
	old := h.conn
	if old != nil {
		old.displaced = true
	}
	c := &Conn{ID: randomID("hconn_", 20), r: r, h: h, frames: make(chan Frame), done: make(chan struct{})}
	h.conn = c
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return c, nil
}

// Close ends the connection. Commands it carried whose calls are still
// open lose their host: their outcome becomes unknown, as does that of a
// cancel_tool the transport took but had not reported written. Commands
// the transport had not taken yet were not sent: their calls fail
// host_not_connected, and a cancel_tool not sent answers so too.
func (c *Conn) Close() {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.endLocked()
}

// endLocked ends the connection; the registry's lock is held.
func (c *Conn) endLocked() {
	if c.ended {
		return
	}
	c.ended = true
	close(c.done)
	if c.h.conn == c {
		c.h.conn = nil
		c.h.since = c.r.cfg.Now()
	}
	for _, cmd := range c.h.outstanding {
		if cmd.conn == c {
			cmd.loseLocked()
		}
	}
	for k, cmd := range c.h.stopped {
		if cmd.conn == c {
			delete(c.h.stopped, k)
		}
	}
}

// send hands a frame to the transport and reports whether it took it:
// errConnEnded when the connection ended first, or ctx's cause when ctx
// ended first. A frame that was not taken was not sent and never will
// be. When wrote is not nil, the transport reports the write's result on
// it (see Frame.Wrote).
func (c *Conn) send(ctx context.Context, data []byte, wrote chan error) error {
	frame := Frame{Data: data, conn: c, wrote: wrote}
	c.r.mu.Lock()
	if c.ended {
		c.r.mu.Unlock()
		return errConnEnded
	}
	c.waiting++
	c.r.mu.Unlock()
	defer func() {
		c.r.mu.Lock()
		c.waiting--
		c.r.mu.Unlock()
	}()
	select {
	case c.frames <- frame:
		return nil
	case <-c.done:
		return errConnEnded
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
