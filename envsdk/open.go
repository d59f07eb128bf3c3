package envsdk

import (
	"context"
	"sync"
	"time"

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

// keepOpen counts x as open once its execute answered returned: until
// its Finish was attempted and answered, or its deadline passed (when it
// has one), after which its callback is no longer valid.
func (h *handler) keepOpen(x *Execution) {
	if !x.Invocation.Granted(envapi.MethodFinish) {
		return
	}
	release := h.open.add()
	if !x.Deadline.IsZero() {
		timer := time.AfterFunc(time.Until(x.Deadline), release)
		counted := release
		release = func() {
			timer.Stop()
			counted()
		}
	}
	if !x.Invocation.afterFinish(release) {
		release() // it finished already
	}
}

// drain waits until every Tool that answered returned has finished or
// passed its deadline, or ctx ends.
func (h *handler) drain(ctx context.Context) error { return h.open.wait(ctx) }

// drainer is a handler whose graceful stop waits for more than its
// requests.
type drainer interface {
	drain(ctx context.Context) error
}
