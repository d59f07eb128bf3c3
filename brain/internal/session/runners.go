package session

import (
	"sync/atomic"
	"time"
)

// Bounds of the runners kept between activations.
const (
	maxIdleRunners = 64
	runnerIdle     = time.Second
)

// runners runs activations and tool deliveries on goroutines kept for the
// next one instead of a new goroutine each. A goroutine starts with a
// small stack, and an activation's loop, the JSON of its records and a
// model call grow it several times over, each growth a copy of the stack
// (7 % of the engine's CPU with 64 sessions taking turns); a kept
// goroutine starts its next run with the stack it grew, until the
// collector shrinks it. At most maxIdleRunners wait, each for runnerIdle;
// they end with the engine. A session holds none of them between turns.
type runners struct {
	work    chan func() // unbuffered: a send succeeds only to a waiting runner
	idle    atomic.Int32
	done    <-chan struct{}
	maxIdle int32
	idleFor time.Duration
}

func (r *runners) init(done <-chan struct{}, maxIdle int32, idleFor time.Duration) {
	r.work = make(chan func())
	r.done, r.maxIdle, r.idleFor = done, maxIdle, idleFor
}

// run runs f on a waiting runner, or on a new one.
func (r *runners) run(f func()) {
	select {
	case r.work <- f:
	default:
		go r.loop(f)
	}
}

// loop runs f, then waits for the next function while fewer than
// r.maxIdle wait, for at most r.idleFor.
func (r *runners) loop(f func()) {
	var t *time.Timer
	for {
		f()
		if r.idle.Add(1) > r.maxIdle {
			r.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(r.idleFor)
		} else {
			t.Reset(r.idleFor)
		}
		select {
		case f = <-r.work:
			r.idle.Add(-1)
		case <-t.C:
			r.idle.Add(-1)
			return
		case <-r.done:
			r.idle.Add(-1)
			t.Stop()
			return
		}
	}
}
