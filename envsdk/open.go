package envsdk

import (
	"context"
	"sync"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// openTools counts the Tools that answered returned and have not finished:
// their work goes on after the answer, and a graceful stop (Serve) waits
// for it.
type openTools struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n is 0
}

func newOpenTools() *openTools {
	idle := make(chan struct{})
	close(idle)
	return &openTools{idle: idle}
}

// add counts one open Tool and returns its release, which may be called
// more than once.
func (o *openTools) add() (release func()) {
	o.mu.Lock()
	if o.n == 0 {
		o.idle = make(chan struct{})
	}
	o.n++
	o.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.n--; o.n == 0 {
				close(o.idle)
			}
		})
	}
}

// wait waits until no Tool is open, or ctx ends.
func (o *openTools) wait(ctx context.Context) error {
	o.mu.Lock()
	idle := o.idle
	o.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keepOpen keeps run going once its execute answered returned, until its
// Finish was attempted and answered or its work context ends (a cancel,
// its deadline, its binding released, the server stopping it). Meanwhile
// a Tool whose grant lists finish counts as open: a graceful stop waits
// for it.
func (h *handler) keepOpen(x *Execution, run *toolRun) {
	h.mu.Lock()
	run.returned = true
	h.mu.Unlock()
	if x.Invocation.Granted(envapi.MethodFinish) {
		context.AfterFunc(run.ctx, h.open.add())
	}
	if x.Invocation != nil && !x.Invocation.afterFinish(func() { run.end(errFinished) }) {
		run.end(errFinished) // its finish was answered already
	}
}

// drain waits until every Tool that answered returned has finished or
// passed its deadline, or ctx ends.
func (h *handler) drain(ctx context.Context) error { return h.open.wait(ctx) }

// drainer is a handler whose graceful stop waits for more than its
// requests, and stops that work when the wait is over.
type drainer interface {
	drain(ctx context.Context) error
	stopTools()
	closeIdle()
}

// closeIdle closes the handler's idle connections to Brain.
func (h *handler) closeIdle() { h.caller.closeIdle() }
