package workspace

import (
	"sync"
	"unicode/utf8"
)

// tail keeps the last limit bytes of a stream (where a failing command
// says what went wrong) in a ring of at most limit bytes, and forwards
// the first limit bytes, as they arrive, to forward (nil: none). Writes
// never fail, so a command writing to it is drained, never blocked. It is
// safe for concurrent use.
type tail struct {
	mu      sync.Mutex
	limit   int
	ring    []byte // grows to limit, then written round from next
	next    int
	written int64
	forward func(p []byte)
}

func newTail(limit int, forward func(p []byte)) *tail {
	return &tail{limit: max(limit, 0), forward: forward}
}

// Write keeps the end of what was written and reports all of p written.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	fwd := p[:max(min(int64(len(p)), int64(t.limit)-t.written), 0)]
	t.written += int64(len(p))
	q := p
	if len(q) > t.limit {
		q = q[len(q)-t.limit:]
	}
	if n := min(t.limit-len(t.ring), len(q)); n > 0 {
		if len(t.ring)+n > cap(t.ring) {
			grown := make([]byte, len(t.ring), min(max(2*cap(t.ring), len(t.ring)+n), t.limit))
			copy(grown, t.ring)
			t.ring = grown
		}
		t.ring = append(t.ring, q[:n]...)
		q = q[n:]
	}
	for len(q) > 0 {
		n := copy(t.ring[t.next:], q)
		q = q[n:]
		t.next = (t.next + n) % t.limit
	}
	t.mu.Unlock()
	if len(fwd) > 0 && t.forward != nil {
		t.forward(fwd)
	}
	return len(p), nil
}

// Truncated reports whether more than limit bytes were written.
func (t *tail) Truncated() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written > int64(t.limit)
}

// Bytes answers a copy of the kept end of the stream; when the start of
// the stream was dropped, it begins at a character's start (past the
// bytes of a character the cut left unfinished).
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.ring))
	out = append(out, t.ring[t.next:]...)
	out = append(out, t.ring[:t.next]...)
	if t.written > int64(len(out)) {
		for i := 0; i < len(out) && i < utf8.UTFMax; i++ {
			if utf8.RuneStart(out[i]) {
				return out[i:]
			}
		}
	}
	return out
}
