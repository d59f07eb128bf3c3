package fit

import (
	"sync"
	"unicode/utf8"
)

// Tail keeps the last limit bytes written to it (the end of a command's
// stderr, where a failure says what went wrong) in a ring of at most limit
// bytes, allocated as they come. Writes never fail, so a command writing
// to it is drained, never blocked. It is safe for concurrent use.
type Tail struct {
	mu      sync.Mutex
	limit   int64
	ring    []byte // grows to limit, then written round from next
	next    int
	written int64
}

// NewTail returns a Tail keeping the last limit bytes (none when limit is
// zero or less).
func NewTail(limit int64) *Tail {
	return &Tail{limit: max(limit, 0)}
}

// Write keeps the end of what was written and reports all of p written.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written += int64(len(p))
	q := p
	if int64(len(q)) > t.limit {
		q = q[int64(len(q))-t.limit:]
	}
	if room := t.limit - int64(len(t.ring)); room > 0 && len(q) > 0 {
		n := int(min(room, int64(len(q))))
		if len(t.ring)+n > cap(t.ring) {
			size := min(int64(max(2*cap(t.ring), len(t.ring)+n)), t.limit)
			grown := make([]byte, len(t.ring), size)
			copy(grown, t.ring)
			t.ring = grown
		}
		t.ring = append(t.ring, q[:n]...)
		q = q[n:]
	}
	// Whatever is left comes once the ring is full: it overwrites the
	// oldest bytes.
	for len(q) > 0 {
		n := copy(t.ring[t.next:], q)
		q = q[n:]
		t.next = (t.next + n) % len(t.ring)
	}
	return len(p), nil
}

// Written is how many bytes were written.
func (t *Tail) Written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// Truncated reports whether more than limit bytes were written, so that
// the start of what was written is no longer kept.
func (t *Tail) Truncated() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written > t.limit
}

// Bytes answers a copy of the bytes kept, as they were written: the last
// limit bytes, or all when fewer were written.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last(int64(len(t.ring)))
}

// Last answers a copy of the last n bytes kept (all kept when fewer).
// When something was written before them, they begin at a character's
// start: past the bytes of a character the cut left unfinished.
func (t *Tail) Last(n int64) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.last(n)
	if t.written > int64(len(out)) {
		out = out[runeStart(out):]
	}
	return out
}

// last answers a copy of the last n bytes kept, in order. Callers hold
// t.mu.
func (t *Tail) last(n int64) []byte {
	k := int(min(max(n, 0), int64(len(t.ring))))
	out := make([]byte, 0, k)
	// The kept bytes in order are ring[next:] then ring[:next]; the last
	// k of them start k bytes before next, round the ring.
	start := t.next - k
	if start >= 0 {
		return append(out, t.ring[start:t.next]...)
	}
	out = append(out, t.ring[len(t.ring)+start:]...)
	return append(out, t.ring[:t.next]...)
}

// runeStart is where the first character of data, the end of a longer
// text, begins: past the bytes of a character the cut left unfinished.
// Data that is not text is answered whole.
func runeStart(data []byte) int {
	for i := 0; i < len(data) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(data[i]) {
			return i
		}
	}
	return 0
}
