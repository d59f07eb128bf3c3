package toolset

import (
	"bytes"
	"encoding/base64"
	"sync"
	"unicode/utf8"
)

// Budget is a cap on output bytes shared by the Heads made from it: a
// provider that caps stdout and stderr together makes both from one
// Budget, one that caps each stream makes one Budget per stream. It is
// safe for concurrent use.
type Budget struct {
	mu        sync.Mutex
	left      int64
	truncated bool
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{left: limit} }

// Truncated reports whether a Head of b dropped bytes.
func (b *Budget) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truncated
}

// Head returns a writer that keeps the head of what is written to it
// while b lasts and drops the rest. forward, when not nil, receives each
// kept piece in order, outside b's lock; it must not keep the slice.
func (b *Budget) Head(forward func(p []byte)) *Head {
	return &Head{b: b, forward: forward}
}

// Head keeps the head of a stream within a Budget. Writes never fail, so
// a program writing to it is drained, never blocked.
type Head struct {
	b       *Budget
	forward func([]byte)
	buf     bytes.Buffer
}

// Write keeps what fits in the budget and reports all of p written.
func (h *Head) Write(p []byte) (int, error) {
	b := h.b
	b.mu.Lock()
	keep := p
	if int64(len(keep)) > b.left {
		keep = keep[:max(b.left, 0)]
		b.truncated = true
	}
	b.left -= int64(len(keep))
	h.buf.Write(keep)
	b.mu.Unlock()
	if len(keep) > 0 && h.forward != nil {
		h.forward(keep)
	}
	return len(p), nil
}

// Bytes returns a copy of what h kept.
func (h *Head) Bytes() []byte {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return bytes.Clone(h.buf.Bytes())
}

// Truncated reports whether h's budget dropped bytes (of any of its
// Heads).
func (h *Head) Truncated() bool { return h.b.Truncated() }

// Text returns b as a string of valid UTF-8, replacing each invalid
// sequence (a character cut by a cap included) with U+FFFD.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// encode returns data as text when it is valid UTF-8, else as base64.
func encode(data []byte) (content, encoding string) {
	if utf8.Valid(data) {
		return string(data), EncodingUTF8
	}
	return base64.StdEncoding.EncodeToString(data), EncodingBase64
}
