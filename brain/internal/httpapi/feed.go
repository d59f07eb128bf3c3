package httpapi

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// feed is the shared subscription of one session's streams.
type feed struct {
	s      *Server
	id     string
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[*stream]struct{}
	closed  bool

	list []*stream // the streams of one fan-out; owned by run
}

// attach registers st with session id's feed, starting the feed if needed.
func (s *Server) attach(ctx context.Context, id string, st *stream) (*feed, error) {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	f := s.feeds[id]
	if f == nil {
		next, err := s.nextSequence(ctx, id)
		if err != nil {
			return nil, err
		}
		backlog := max(s.opts.MaxLiveBacklog, 4*DefaultMaxLiveBacklog)
		sub, err := s.opts.Engine.Subscribe(ctx, id, next-1, backlog)
		if err != nil {
			return nil, err
		}
		fctx, cancel := context.WithCancel(context.Background())
		f = &feed{s: s, id: id, cancel: cancel, streams: map[*stream]struct{}{}}
		s.feeds[id] = f
		go f.run(fctx, sub, next-1, backlog)
	}
	// st.f is set before the feed can see st: its pushes read it.
	st.f = f
	f.mu.Lock()
	f.streams[st] = struct{}{}
	f.mu.Unlock()
	s.streamSet[st] = struct{}{}
	return f, nil
}

// detach unregisters st; the last stream of a feed stops it.
func (s *Server) detach(st *stream) {
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	delete(s.streamSet, st)
	f := st.f
	f.mu.Lock()
	delete(f.streams, st)
	empty := len(f.streams) == 0 && !f.closed
	if empty {
		f.closed = true
	}
	f.mu.Unlock()
	if empty {
		if s.feeds[f.id] == f {
			delete(s.feeds, f.id)
		}
		f.cancel()
	}
}

// run follows the session and fans each frame out, encoded once.
func (f *feed) run(ctx context.Context, sub *session.Subscription, last uint64, backlog int) {
	defer func() { sub.Close() }()
	hb := time.NewTicker(f.s.opts.Heartbeat)
	defer hb.Stop()
	type item struct {
		fr  session.Frame
		err error
	}
	// The subscription is read on its own goroutine so that heartbeats
	// and cancellation are served without a per-Next timer. The frames
	// it has read meanwhile (a commit publishes its records together)
	// are fanned out as one batch: one queue lock and at most one write
	// per stream for all of them.
	items := make(chan item, feedBatch)
	pump := func(sub *session.Subscription) {
		for {
			fr, err := sub.Next(ctx)
			select {
			case items <- item{fr, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}
	go pump(sub)
	var batch []*frame
	for {
		select {
		case <-ctx.Done():
			return
		case <-hb.C:
			f.heartbeat()
			continue
		case it := <-items:
			batch = batch[:0]
			var err error
			for {
				if err = it.err; err != nil {
					break
				}
				var fr *frame
				switch {
				case it.fr.Event != nil:
					fr = eventFrame(it.fr.Event)
					last = it.fr.Event.Sequence
				case it.fr.Live != nil:
					fr = liveFrame(it.fr.Live.Type, it.fr.Live.Data)
				}
				if fr != nil {
					batch = append(batch, fr)
				}
				if len(batch) == feedBatch || len(items) == 0 {
					break
				}
				it = <-items
			}
			if len(batch) > 0 {
				f.fanOut(newBatch(batch))
				clear(batch)
			}
			if err != nil {
				if errors.Is(err, journal.ErrLagged) && ctx.Err() == nil {
					// The feed fell behind (the machine is starved): follow
					// again from the last frame; streams dedupe by sequence.
					sub.Close()
					nsub, err := f.s.opts.Engine.Subscribe(ctx, f.id, last, backlog)
					if err == nil {
						sub = nsub
						go pump(sub)
						continue
					}
				}
				f.endAll()
				return
			}
		}
	}
}

// feedBatch bounds the frames a feed fans out at once.
const feedBatch = 64

// fanOutShare is the least number of streams worth a fan-out worker of
// their own.
const fanOutShare = 64

// fanOut pushes b to every stream, the streams split among up to
// GOMAXPROCS workers (the feed's goroutine is one of them). It works on a
// copy of the stream set, so that streams attach and detach meanwhile; a
// stream attached after the copy reads b's records in its catch-up.
func (f *feed) fanOut(b *batch) {
	f.mu.Lock()
	list := f.list[:0]
	for st := range f.streams {
		list = append(list, st)
	}
	f.mu.Unlock()
	backlog := f.s.opts.MaxLiveBacklog
	workers := min(runtime.GOMAXPROCS(0), (len(list)+fanOutShare-1)/fanOutShare)
	if workers > 1 {
		var wg sync.WaitGroup
		per := (len(list) + workers - 1) / workers
		for w := 1; w < workers; w++ {
			part := list[min(w*per, len(list)):min((w+1)*per, len(list))]
			wg.Go(func() {
				for _, st := range part {
					st.push(b, backlog)
				}
			})
		}
		for _, st := range list[:per] {
			st.push(b, backlog)
		}
		wg.Wait()
	} else {
		for _, st := range list {
			st.push(b, backlog)
		}
	}
	clear(list)
	f.list = list
}

// heartbeat queues a comment for every stream idle for a heartbeat.
func (f *feed) heartbeat() {
	cut := time.Now().Add(-f.s.opts.Heartbeat + f.s.opts.Heartbeat/8)
	f.mu.Lock()
	list := f.list[:0]
	for st := range f.streams {
		st.mu.Lock()
		idle := !st.catching && !st.writing && st.activity.Before(cut)
		st.mu.Unlock()
		if idle {
			list = append(list, st)
		}
	}
	f.mu.Unlock()
	for _, st := range list {
		st.push(keepAliveBatch, f.s.opts.MaxLiveBacklog)
	}
	clear(list)
	f.list = list
}

// endAll ends every stream after its queue: the session is gone, the
// engine closed or the subscription failed. The feed stops serving the
// session at once, so that a stream opened meanwhile starts a feed of its
// own instead of joining one that no longer follows.
func (f *feed) endAll() {
	f.s.feedsMu.Lock()
	if f.s.feeds[f.id] == f {
		delete(f.s.feeds, f.id)
	}
	f.s.feedsMu.Unlock()
	f.mu.Lock()
	streams := make([]*stream, 0, len(f.streams))
	for st := range f.streams {
		streams = append(streams, st)
	}
	f.mu.Unlock()
	for _, st := range streams {
		st.end(false)
	}
}

// stopStreams ends, once the server stopped at stopAt, each stream that
// has received nothing for stopGrace (and not since stopAt), and answers
// how many remain.
func (s *Server) stopStreams(stopAt time.Time) int {
	s.feedsMu.Lock()
	streams := make([]*stream, 0, len(s.streamSet))
	for st := range s.streamSet {
		streams = append(streams, st)
	}
	s.feedsMu.Unlock()
	cut := time.Now().Add(-stopGrace)
	if stopAt.After(cut) {
		return len(streams)
	}
	for _, st := range streams {
		st.mu.Lock()
		quiet := !st.catching && !st.writing && len(st.queue) == 0 && st.activity.Before(cut)
		st.mu.Unlock()
		if quiet {
			st.end(false)
		}
	}
	return len(streams)
}
