package envtest

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// open holds the fake Brains not yet closed, so that Post can close the
// controller contexts of the operations it sends, as Brain closes them.
var open = struct {
	sync.Mutex
	brains map[*Brain]struct{}
}{brains: map[*Brain]struct{}{}}

func register(b *Brain) {
	open.Lock()
	defer open.Unlock()
	open.brains[b] = struct{}{}
}

func unregister(b *Brain) {
	open.Lock()
	defer open.Unlock()
	delete(open.brains, b)
}

// sentOperation is what Post reads of a command to close its controller
// contexts.
type sentOperation struct {
	Operation struct {
		SessionID   string `json:"session_id"`
		Environment string `json:"environment"`
		Request     struct {
			Type           string `json:"type"`
			TargetSequence uint64 `json:"target_sequence"`
			DeadlineMs     *int64 `json:"deadline_ms"`
			Callback       *struct {
				Token string `json:"token"`
			} `json:"callback"`
		} `json:"request"`
		Binding *struct {
			Sequence uint64 `json:"sequence"`
		} `json:"binding"`
		Context *struct {
			Token string `json:"token"`
		} `json:"context"`
	} `json:"operation"`
}

// readOperation reads the part of a command body Post needs; ok is false
// when the body is not a command.
func readOperation(data []byte) (op sentOperation, ok bool) {
	return op, json.Unmarshal(data, &op) == nil
}

// closeTarget closes the controller context and revokes the execution
// callback of the execute a cancel names, as Brain does when it stops the
// execute, before it sends the cancel: cancellation makes later calls
// with either fail.
func closeTarget(op sentOperation) {
	o := op.Operation
	if o.Request.Type != "cancel" || o.Request.TargetSequence == 0 {
		return
	}
	for _, b := range brains() {
		b.mu.Lock()
		for _, g := range b.grants {
			if g.session != o.SessionID || g.sequence != o.Request.TargetSequence {
				continue
			}
			if g.kind == KindExecution || (g.kind == KindContext && g.env == o.Environment) {
				g.revoked = true
			}
		}
		b.mu.Unlock()
	}
}

// bindDeadline makes the callback an execute carries expire at its
// deadline, counted from sent, as Brain's does: it stays valid after the
// execute returns, under the original deadline only.
func bindDeadline(op sentOperation, sent time.Time) {
	r := op.Operation.Request
	if r.Type != "execute" || r.DeadlineMs == nil || r.Callback == nil || r.Callback.Token == "" {
		return
	}
	at := sent.Add(time.Duration(max(*r.DeadlineMs, 0)) * time.Millisecond)
	for _, b := range brains() {
		b.mu.Lock()
		if g, ok := b.grants[r.Callback.Token]; ok && g.kind == KindExecution && (g.expires.IsZero() || at.Before(g.expires)) {
			g.expires = at
		}
		b.mu.Unlock()
	}
}

// closeContext closes the controller context an operation carried, as
// Brain does when the operation returns (answered, refused or
// unreachable).
func closeContext(op sentOperation) {
	if op.Operation.Context == nil || op.Operation.Context.Token == "" {
		return
	}
	for _, b := range brains() {
		b.mu.Lock()
		if g, ok := b.grants[op.Operation.Context.Token]; ok && g.kind == KindContext {
			g.revoked = true
		}
		b.mu.Unlock()
	}
}

func brains() []*Brain {
	open.Lock()
	defer open.Unlock()
	out := make([]*Brain, 0, len(open.brains))
	for b := range open.brains {
		out = append(out, b)
	}
	return out
}

// closeBinding closes the reporter of the binding a detach or teardown
// released, as Brain records the binding detached (a detach answered,
// whatever it answered) or deleted (a teardown accepted): later reports
// answer 404 not_found. An operation whose outcome is unknown (answered
// unknown, or not answered) leaves the reporter open, for the provider to
// report its resolution.
func closeBinding(op sentOperation, r *envapi.Response) {
	o := op.Operation
	if r == nil {
		return
	}
	switch {
	case o.Request.Type == "detach" && (r.Receipt.Type == envapi.ReceiptAccepted || r.Receipt.Type == envapi.ReceiptFailure):
	case o.Request.Type == "teardown" && r.Receipt.Type == envapi.ReceiptAccepted:
	default:
		return
	}
	bseq := uint64(1)
	if o.Binding != nil {
		bseq = o.Binding.Sequence
	}
	for _, b := range brains() {
		b.mu.Lock()
		for _, g := range b.grants {
			if g.kind == KindReporter && g.session == o.SessionID && g.env == o.Environment && g.sequence == bseq {
				g.closed = true
			}
		}
		b.mu.Unlock()
	}
}
