package hosts

import (
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
)

// Conn is a host's commands connection. The transport writes every frame
// of Frames to the host, once, and calls Close when the connection ends.
type Conn struct {
	// ID names the connection (for HostSuspend).
	ID     string
	r      *Registry
	h      *host
	frames chan []byte
	done   chan struct{}
	// ended is set (under the registry's lock) when the connection ends.
	ended bool
	// displaced is set (before done closes) when a newer connection
	// replaced this one.
	displaced bool
}

// Displaced reports, once Done is closed, whether a newer connection of
// the same host replaced this one.
func (c *Conn) Displaced() bool {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.displaced
}

// Frames delivers the encoded HostCommand frames to write.
func (c *Conn) Frames() <-chan []byte { return c.frames }

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
	c := &Conn{ID: randomID("hconn_", 20), r: r, h: h, frames: make(chan []byte, r.cfg.MaxCommands*2+8), done: make(chan struct{})}
	h.conn = c
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return c, nil
}

// Close ends the connection. Commands it carried whose calls are still
// open lose their host: their outcome becomes unknown. Commands still
// queued (the transport never took them from Frames) were not sent: they
// are dropped and their calls fail host_not_connected.
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
	unsent := c.dropQueuedLocked()
	for k, cmd := range c.h.outstanding {
		if cmd.conn == c {
			cmd.unsent = unsent[k]
			cmd.loseLocked()
		}
	}
	for k, cmd := range c.h.stopped {
		if cmd.conn == c {
			delete(c.h.stopped, k)
		}
	}
}

// dropQueuedLocked empties the queue of an ended connection and answers
// the tool calls whose invoke_tool was still in it.
func (c *Conn) dropQueuedLocked() map[key]bool {
	unsent := map[key]bool{}
	for {
		select {
		case f := <-c.frames:
			var cmd api.HostCommand
			if json.Unmarshal(f, &cmd) == nil && cmd.Operation.Type == api.HostInvokeTool {
				unsent[key{cmd.SessionID, cmd.Sequence}] = true
			}
		default:
			return unsent
		}
	}
}

// send queues a frame; false when the connection ended or its queue is
// full (the frame is then not sent at all). It holds the registry's lock
// so that a frame is never queued on a connection Close has emptied.
func (c *Conn) send(frame []byte) bool {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.frames <- frame:
		return true
	default:
		return false
	}
}
