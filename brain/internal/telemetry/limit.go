package telemetry

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxBuckets bounds the per-session buckets kept; beyond it, buckets that
// have refilled (whose sessions are quiet) are forgotten, and if none has,
// all are.
const maxBuckets = 4096

// limiter is a token bucket per session and one for the server.
type limiter struct {
	now     func() time.Time
	session rate.Limit
	burst   int
	global  *rate.Limiter

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimiter(session, global float64, now func() time.Time) *limiter {
	return &limiter{now: now, session: rate.Limit(session), burst: burst(session),
		global: rate.NewLimiter(rate.Limit(global), burst(global)), buckets: map[string]*rate.Limiter{}}
}

// burst is two seconds' worth of records, at least one.
func burst(r float64) int { return max(int(2*r), 1) }

// allow takes a token from the session's bucket, then from the global
// one, and answers the drop reason of the first that is empty ("" when
// both had one). A record refused by the global bucket still spent its
// session's token: a flooding session cannot save up.
func (l *limiter) allow(session string) string {
	now := l.now()
	l.mu.Lock()
	b := l.buckets[session]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.pruneLocked(now)
		}
		b = rate.NewLimiter(l.session, l.burst)
		l.buckets[session] = b
	}
	ok := b.AllowN(now, 1)
	l.mu.Unlock()
	if !ok {
		return DropRateSession
	}
	if !l.global.AllowN(now, 1) {
		return DropRateGlobal
	}
	return ""
}

func (l *limiter) pruneLocked(now time.Time) {
	for id, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, id)
		}
	}
	if len(l.buckets) >= maxBuckets {
		clear(l.buckets)
	}
}
