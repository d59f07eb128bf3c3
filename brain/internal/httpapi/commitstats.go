package httpapi

import (
	"sync/atomic"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// CommitStats counts the durable commits of one request kind (an
// idempotency scope such as ScopeSendSync): journal appends made for the
// request and idempotency-log flushes it waited on.
type CommitStats struct {
	// Requests is how many requests of the kind ran (replayed answers and
	// refused requests are not counted).
	Requests int64
	// BeforeAnswer is the sum over those requests of the commits made
	// before the answer was sent: the serial commits a caller waits on.
	BeforeAnswer int64
	// Total adds the commits made for the requests after their answers
	// (an async submission's turn).
	Total int64
}

type kindStats struct {
	requests, before, total atomic.Int64
}

// counter answers a commit counter for one request of scope.
func (s *Server) counter(scope string) (*kindStats, *commits.Counter) {
	s.statsMu.Lock()
	k := s.stats[scope]
	if k == nil {
		k = &kindStats{}
		s.stats[scope] = k
	}
	s.statsMu.Unlock()
	return k, commits.New(&k.total)
}

// answered records that a request of k answered after c's commits.
func (k *kindStats) answered(c *commits.Counter) {
	k.before.Add(c.Load())
	k.requests.Add(1)
}

// CommitStats answers the commit counts of every request kind served so
// far, by scope.
func (s *Server) CommitStats() map[string]CommitStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := make(map[string]CommitStats, len(s.stats))
	for scope, k := range s.stats {
		out[scope] = CommitStats{Requests: k.requests.Load(), BeforeAnswer: k.before.Load(), Total: k.total.Load()}
	}
	return out
}
