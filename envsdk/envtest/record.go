package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Call is one request the fake Brain received.
type Call struct {
	Kind        Kind
	Session     string
	Environment string // reporter and context calls
	// Sequence is the execution's sequence, the binding sequence of a
	// reporter call or the operation's sequence of a context call.
	Sequence uint64
	Method   string
	Input    json.RawMessage
	Token    string
	Time     time.Time
	// Status is the HTTP status answered; 0 when the acknowledgement was
	// dropped by an injected fault.
	Status int
	// Answer is the body answered (empty when dropped).
	Answer json.RawMessage
	// Committed is the sequence committed by the call, 0 if none.
	Committed uint64
	// Fault is the injected fault that shaped the answer, if any.
	Fault *Fault
}

// Accepted reports whether the call was answered 2xx or processed and its
// acknowledgement dropped.
func (c Call) Accepted() bool {
	return (c.Status >= 200 && c.Status < 300) || (c.Status == 0 && c.Fault != nil && c.Fault.Kind == LoseAck)
}

// String describes the call on one line, with an excerpt of its answer.
func (c Call) String() string {
	return fmt.Sprintf("%s %s/%s seq %d method %s → %d %s", c.Kind, c.Session, c.Environment, c.Sequence, c.Method, c.Status, excerpt(c.Answer))
}

func excerpt(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func (b *Brain) record(c Call) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, c)
	close(b.changed)
	b.changed = make(chan struct{})
}

// Calls returns every call received so far, in arrival order.
func (b *Brain) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// CallsFor returns the execution callbacks of (session, seq), in order.
func (b *Brain) CallsFor(session string, seq uint64) []Call {
	return b.Filter(func(c Call) bool {
		return c.Kind == KindExecution && c.Session == session && c.Sequence == seq
	})
}

// Filter returns the calls matching pred, in order.
func (b *Brain) Filter(pred func(Call) bool) []Call {
	var out []Call
	for _, c := range b.Calls() {
		if pred(c) {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls match pred.
func (b *Brain) Count(pred func(Call) bool) int { return len(b.Filter(pred)) }

// WaitFor waits until a call matching pred has been recorded and returns
// the first such call. It fails when ctx ends or the Brain is closed.
func (b *Brain) WaitFor(ctx context.Context, pred func(Call) bool) (Call, error) {
	for {
		b.mu.Lock()
		for _, c := range b.calls {
			if pred(c) {
				b.mu.Unlock()
				return c, nil
			}
		}
		changed := b.changed
		n := len(b.calls)
		b.mu.Unlock()
		select {
		case <-changed:
		case <-b.closed:
			return Call{}, fmt.Errorf("envtest: brain closed while waiting (%d calls seen)", n)
		case <-ctx.Done():
			return Call{}, fmt.Errorf("envtest: wait for call (%d calls seen): %w", n, ctx.Err())
		}
	}
}

// Method matches calls of one method.
func Method(method string) func(Call) bool {
	return func(c Call) bool { return c.Method == method }
}

// Execution matches calls of one method by execution (session, seq).
func Execution(session string, seq uint64, method string) func(Call) bool {
	return func(c Call) bool {
		return c.Kind == KindExecution && c.Session == session && c.Sequence == seq && (method == "" || c.Method == method)
	}
}
