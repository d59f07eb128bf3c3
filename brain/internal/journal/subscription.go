package journal

import (
	"context"
	"fmt"
	"sync"
)

// Subscription delivers a session's records in order: first those already
// committed after the cursor given to Subscribe, then live ones. It is safe
// for one goroutine to call Next while another calls Close.
type Subscription struct {
	session    string
	read       func(ctx context.Context, after uint64) ([]Record, error)
	unregister func(*Subscription)
	backlog    int

	mu       sync.Mutex
	next     uint64   // sequence Next returns next
	liveFrom uint64   // first sequence delivered through push
	pending  []Record // catch-up page being delivered
	live     []Record // pushed records not yet delivered
	err      error    // terminal condition, reported once pending runs out
	wake     chan struct{}
	closed   bool
}

func newSubscription(session string, after, liveFrom uint64, backlog int,
	read func(context.Context, uint64) ([]Record, error), unregister func(*Subscription)) *Subscription {
	if backlog <= 0 {
		backlog = DefaultBacklog
	}
	return &Subscription{
		session:    session,
		read:       read,
		unregister: unregister,
		backlog:    backlog,
		next:       after + 1,
		liveFrom:   liveFrom,
		wake:       make(chan struct{}, 1),
	}
}

// Next blocks until the next record is committed and returns it. It returns
// an error wrapping ErrLagged when more than the backlog of live records
// piled up undelivered, ErrClosed after Close or when the store closes,
// ErrNotFound when the session was deleted, or ctx's error. Records
// returned by Next must be treated as read-only.
func (s *Subscription) Next(ctx context.Context) (Record, error) {
	for {
		s.mu.Lock()
		for len(s.pending) > 0 {
			r := s.pending[0]
			s.pending = s.pending[1:]
			if r.Sequence == s.next {
				s.next++
				s.mu.Unlock()
				return r, nil
			}
		}
		if s.closed {
			s.mu.Unlock()
			return Record{}, fmt.Errorf("journal: subscription to %s: %w", s.session, ErrClosed)
		}
		if s.next < s.liveFrom {
			after := s.next - 1
			s.mu.Unlock()
			page, err := s.read(ctx, after)
			if err != nil {
				return Record{}, err
			}
			s.mu.Lock()
			if len(page) == 0 || page[0].Sequence != after+1 {
				// The session lost records it had committed (deleted).
				if s.err == nil {
					s.err = fmt.Errorf("journal: subscription to %s: records after %d are gone: %w", s.session, after, ErrNotFound)
				}
				s.next = s.liveFrom
			}
			if s.next == after+1 {
				s.pending = page
			}
			s.mu.Unlock()
			continue
		}
		if s.err != nil {
			err := s.err
			s.mu.Unlock()
			return Record{}, err
		}
		for len(s.live) > 0 {
			r := s.live[0]
			s.live[0] = Record{}
			s.live = s.live[1:]
			if r.Sequence == s.next {
				s.next++
				s.mu.Unlock()
				return r, nil
			}
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return Record{}, ctx.Err()
		}
	}
}

// Close ends the subscription and releases its buffers.
func (s *Subscription) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.pending, s.live = nil, nil
	s.mu.Unlock()
	if !already && s.unregister != nil {
		s.unregister(s)
	}
	s.signal()
}

// push offers committed records to the subscription. It never blocks: when
// the backlog would overflow the subscription ends with ErrLagged.
func (s *Subscription) push(recs []Record) {
	s.mu.Lock()
	if s.closed || s.err != nil {
		s.mu.Unlock()
		return
	}
	if len(s.live)+len(recs) > s.backlog {
		if s.next < s.liveFrom {
			// Still catching up from the store: drop the buffered records
			// and read them from the store too, instead of failing.
			s.live = nil
			s.liveFrom = recs[len(recs)-1].Sequence + 1
			s.mu.Unlock()
			return
		}
		s.live = nil
		s.err = fmt.Errorf("journal: subscription to %s: more than %d records undelivered: %w", s.session, s.backlog, ErrLagged)
	} else {
		s.live = append(s.live, recs...)
	}
	s.mu.Unlock()
	s.signal()
}

// end stops the subscription with err once already-delivered records are
// consumed.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.live = nil
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
