package workspace

import (
	"sync"

	"github.com/brain-in-go/brain/providers/internal/fit"
)

// tail keeps the last limit bytes of a stream (where a failing command
// says what went wrong; see fit.Tail) and forwards the first limit bytes,
// as they arrive, to forward (nil: none). Writes never fail, so a command
// writing to it is drained, never blocked. It is safe for concurrent use.
type tail struct {
	*fit.Tail
	limit   int64
	forward func(p []byte)

	mu        sync.Mutex
	forwarded int64
}

func newTail(limit int, forward func(p []byte)) *tail {
	return &tail{Tail: fit.NewTail(int64(limit)), limit: int64(max(limit, 0)), forward: forward}
}

// Write keeps the end of what was written and reports all of p written.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	fwd := p[:max(min(int64(len(p)), t.limit-t.forwarded), 0)]
	t.forwarded += int64(len(fwd))
	_, _ = t.Tail.Write(p)
	t.mu.Unlock()
	if len(fwd) > 0 && t.forward != nil {
		t.forward(fwd)
	}
	return len(p), nil
}

// Bytes answers a copy of the kept end of the stream; when the start of
// the stream was dropped, it begins at a character's start (past the
// bytes of a character the cut left unfinished).
func (t *tail) Bytes() []byte { return t.Last(t.limit) }
