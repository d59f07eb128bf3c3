package envtest

import (
	"encoding/json"
	"sync"
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
		} `json:"request"`
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

// closeTarget closes the controller context of the execute a cancel
// names, as Brain does when it stops the execute, before it sends the
// cancel.
func closeTarget(op sentOperation) {
	o := op.Operation
	if o.Request.Type != "cancel" || o.Request.TargetSequence == 0 {
		return
	}
	for _, b := range brains() {
		b.mu.Lock()
		for _, g := range b.grants {
			if g.kind == KindContext && g.session == o.SessionID && g.env == o.Environment && g.sequence == o.Request.TargetSequence {
				g.revoked = true
			}
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
