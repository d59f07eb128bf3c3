package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Event streams.
//
// Every stream of a session shares one feed: a single engine subscription
// whose frames are encoded once and handed, as the same immutable bytes, to
// each stream's queue. Pushing never blocks, so a stalled reader never
// slows the feed or commits; a stream whose queue holds more than
// Options.MaxLiveBacklog records ends (lagged). A stream has no goroutine
// of its own while idle: an HTTP/1.1 connection is taken over (hijacked)
// once the response head is written, and a short-lived writer goroutine
// drains a stream's queue whenever frames arrive, writing everything
// queued (coalesced into one chunk and one writev) with one deadline.
// Other connections (HTTP/2) keep their handler goroutine and write
// through the ResponseWriter.

// streamWriteTimeout bounds one write to a stream subscriber; a reader
// that stalls longer loses its stream (on a hijacked connection the
// deadline is moved only once it is less than half of this away, so the
// bound there is between half of it and all of it).
const streamWriteTimeout = 30 * time.Second

// stopGrace is how long a stream waits for a further frame, and for a
// write, once the server stops.
const stopGrace = 250 * time.Millisecond

// maxQueuedLive bounds the live-only frames (and comments) queued for one
// stream; further ones are dropped (live frames are best effort).
const maxQueuedLive = 256

// frame is one encoded server-sent event, shared by every stream.
type frame struct {
	seq  uint64 // sequence of a recorded event; 0 for live frames and comments
	b    []byte
	last bool // session_ended or session_creation_failed
}

var keepAliveBatch = []*frame{{b: []byte(": keep-alive\n\n")}}

// feed is the shared subscription of one session's streams.
type feed struct {
	s      *Server
	id     string
	cancel context.CancelFunc

	mu      sync.Mutex
	streams map[*stream]struct{}
	closed  bool
}

// sink is where a stream's bytes go.
type sink interface {
	// write writes frames within the deadline.
	write(frames []*frame, deadline time.Time) error
	// finish ends the response and releases the connection.
	finish()
}

// stream is one subscriber.
type stream struct {
	s    *Server
	f    *feed
	sink sink

	mu       sync.Mutex
	queue    []*frame
	events   int // recorded events in queue
	lives    int // other frames in queue
	catching bool
	writing  bool
	ended    bool // accepts no more frames; finish after the queue
	closed   bool
	lagged   bool      // ended because the subscriber fell behind
	activity time.Time // last frame queued or written
	lastSeq  uint64    // last recorded event written; owned by the writer
	done     chan struct{}
}

// openStream registers a stream; it answers false while draining.
func (s *Server) openStream() bool {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.streams.Add(1)
	return true
}

// stream serves the events of session id after the cursor as server-sent
// events until the session ends, the subscriber lags, the client leaves or
// the server drains.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, after uint64) {
	if !s.openStream() {
		WriteError(w, errDraining)
		return
	}
	ctx := r.Context()
	st := &stream{s: s, catching: true, lastSeq: after, done: make(chan struct{}), activity: time.Now()}
	_, err := s.attach(ctx, id, st)
	if err != nil {
		s.streams.Done()
		WriteError(w, err)
		return
	}
	// A stream past the end of a finished session would never get a frame.
	sum, err := s.opts.Engine.Summary(ctx, id)
	if err != nil {
		s.detach(st)
		s.streams.Done()
		WriteError(w, err)
		return
	}
	finished := (sum.Status == api.StatusEnded || sum.Status == api.StatusFailed) && after >= sum.LastSequence

	hijacked := false
	if !finished && r.ProtoAtLeast(1, 1) {
		st.sink, hijacked = hijack(w)
	}
	if !hijacked {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if rc.Flush() != nil || finished {
			s.detach(st)
			s.streams.Done()
			return
		}
		st.sink = &writerSink{w: w, rc: rc}
	}
	s.observer().StreamOpened()
	if !st.catchUp(ctx, id) {
		st.end(false)
	}
	st.mu.Lock()
	st.catching = false
	st.kickLocked()
	st.mu.Unlock()
	if hijacked {
		return
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		st.end(true)
		<-st.done
	}
}

// catchUp writes the committed events after the cursor; it answers false
// when the stream should end.
func (st *stream) catchUp(ctx context.Context, id string) bool {
	for {
		page, err := st.s.opts.Engine.Events(ctx, id, st.lastSeq)
		if err != nil {
			return false
		}
		if len(page.Events) == 0 {
			return true
		}
		frames := make([]*frame, 0, len(page.Events))
		for i := range page.Events {
			if fr := eventFrame(&page.Events[i]); fr != nil {
				frames = append(frames, fr)
			}
		}
		if err := st.sink.write(frames, st.deadline()); err != nil {
			return false
		}
		st.lastSeq = page.Events[len(page.Events)-1].Sequence
		st.mu.Lock()
		st.activity = time.Now()
		st.mu.Unlock()
		for _, fr := range frames {
			if fr.last {
				return false
			}
		}
	}
}

// deadline is the deadline of a write starting now.
func (st *stream) deadline() time.Time {
	if st.s.stop.Err() != nil {
		return time.Now().Add(stopGrace)
	}
	return time.Now().Add(streamWriteTimeout)
}

// push queues frames; it never blocks.
func (st *stream) push(frames []*frame, backlog int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	queued := false
	for _, fr := range frames {
		if st.ended {
			break
		}
		if fr.seq != 0 {
			if st.events >= backlog {
				st.s.log.Debug("stream subscriber lagged", "session", st.f.id)
				st.queue, st.events, st.lives = nil, 0, 0
				st.ended, st.lagged = true, true
				break
			}
			st.events++
		} else {
			if st.lives >= maxQueuedLive {
				continue
			}
			st.lives++
		}
		st.queue = append(st.queue, fr)
		queued = true
	}
	if queued {
		st.activity = time.Now()
	}
	st.kickLocked()
}

// end stops accepting frames; the stream finishes after its queue, or at
// once with drop.
func (st *stream) end(drop bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if drop {
		st.queue, st.events, st.lives = nil, 0, 0
	}
	st.ended = true
	st.kickLocked()
}

// kickLocked starts the writer when there is something to do.
func (st *stream) kickLocked() {
	if st.catching || st.writing || st.closed || (len(st.queue) == 0 && !st.ended) {
		return
	}
	st.writing = true
	go st.drain()
}

// drain writes the queue until it is empty, then finishes an ended stream.
func (st *stream) drain() {
	for {
		st.mu.Lock()
		batch := st.queue
		st.queue, st.events, st.lives = nil, 0, 0
		if len(batch) == 0 {
			st.writing = false
			if !st.ended {
				st.mu.Unlock()
				return
			}
			st.mu.Unlock()
			st.close()
			return
		}
		st.mu.Unlock()
		out := batch[:0]
		last := false
		for _, fr := range batch {
			if fr.seq != 0 {
				if fr.seq <= st.lastSeq {
					continue // already written by the catch-up
				}
				st.lastSeq = fr.seq
			}
			out = append(out, fr)
			if fr.last {
				last = true
				break
			}
		}
		if len(out) > 0 {
			if err := st.sink.write(out, st.deadline()); err != nil {
				st.close()
				return
			}
		}
		if last {
			st.close()
			return
		}
		st.mu.Lock()
		st.activity = time.Now()
		st.mu.Unlock()
	}
}

// close finishes the response and unregisters the stream, once.
func (st *stream) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed, st.ended = true, true
	st.queue = nil
	lagged := st.lagged
	st.mu.Unlock()
	st.s.observer().StreamClosed(lagged)
	st.s.detach(st)
	st.sink.finish()
	close(st.done)
	st.s.streams.Done()
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
				f.mu.Lock()
				for st := range f.streams {
					st.push(batch, f.s.opts.MaxLiveBacklog)
				}
				f.mu.Unlock()
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

// heartbeat queues a comment for every stream idle for a heartbeat.
func (f *feed) heartbeat() {
	cut := time.Now().Add(-f.s.opts.Heartbeat + f.s.opts.Heartbeat/8)
	f.mu.Lock()
	defer f.mu.Unlock()
	for st := range f.streams {
		st.mu.Lock()
		idle := !st.catching && !st.writing && st.activity.Before(cut)
		st.mu.Unlock()
		if idle {
			st.push(keepAliveBatch, f.s.opts.MaxLiveBacklog)
		}
	}
}

// endAll ends every stream after its queue: the session is gone or the
// engine closed.
func (f *feed) endAll() {
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

// eventFrame encodes a recorded event.
func eventFrame(ev *api.Event) *frame {
	data, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	b := make([]byte, 0, len(data)+len(ev.EventType)+40)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, ev.Sequence, 10)
	b = append(b, "\nevent: "...)
	b = append(b, ev.EventType...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return &frame{seq: ev.Sequence, b: b, last: ev.EventType == api.KindSessionEnded || ev.EventType == api.KindSessionCreationFailed}
}

// liveFrame encodes a live-only frame: no id line.
func liveFrame(typ string, data json.RawMessage) *frame {
	compact, err := json.Marshal(data)
	if err != nil {
		return nil
	}
	b := make([]byte, 0, len(compact)+len(typ)+20)
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, compact...)
	b = append(b, "\n\n"...)
	return &frame{b: b}
}

// writerSink writes through the ResponseWriter; the handler goroutine
// stays until the stream ends.
type writerSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (ws *writerSink) write(frames []*frame, deadline time.Time) error {
	_ = ws.rc.SetWriteDeadline(deadline)
	for _, fr := range frames {
		if _, err := ws.w.Write(fr.b); err != nil {
			return err
		}
	}
	return ws.rc.Flush()
}

func (ws *writerSink) finish() {}

// connSink writes the chunked body of a hijacked HTTP/1.1 connection.
type connSink struct {
	c        net.Conn
	deadline time.Time // the write deadline set on c
}

// hijack takes the connection over and writes the response head.
func hijack(w http.ResponseWriter) (sink, bool) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	_ = c.SetDeadline(time.Time{})
	if brw != nil && brw.Writer.Buffered() > 0 {
		_ = brw.Flush()
	}
	head := "HTTP/1.1 200 OK\r\n" +
		"Cache-Control: no-store\r\n" +
		"Connection: close\r\n" +
		"Content-Type: text/event-stream\r\n" +
		"Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n" +
		"Transfer-Encoding: chunked\r\n" +
		"X-Accel-Buffering: no\r\n\r\n"
	deadline := time.Now().Add(streamWriteTimeout)
	_ = c.SetWriteDeadline(deadline)
	if _, err := c.Write([]byte(head)); err != nil {
		c.Close()
		return &connSink{c: c, deadline: deadline}, true // the first write fails and ends it
	}
	return &connSink{c: c, deadline: deadline}, true
}

var crlf = []byte("\r\n")

func (cs *connSink) write(frames []*frame, deadline time.Time) error {
	n := 0
	for _, fr := range frames {
		n += len(fr.b)
	}
	if n == 0 {
		return nil
	}
	bufs := make(net.Buffers, 0, len(frames)+2)
	bufs = append(bufs, append(strconv.AppendInt(make([]byte, 0, 20), int64(n), 16), '\r', '\n'))
	for _, fr := range frames {
		bufs = append(bufs, fr.b)
	}
	bufs = append(bufs, crlf)
	// Moving the deadline costs a timer update; a deadline still at least
	// half the write timeout away is kept (a stalled reader is then cut
	// off between half and all of streamWriteTimeout), an earlier one
	// (the server stopping) is always set.
	if deadline.Before(cs.deadline) || cs.deadline.Sub(time.Now()) < streamWriteTimeout/2 {
		_ = cs.c.SetWriteDeadline(deadline)
		cs.deadline = deadline
	}
	_, err := bufs.WriteTo(cs.c)
	return err
}

func (cs *connSink) finish() {
	_ = cs.c.SetWriteDeadline(time.Now().Add(stopGrace))
	_, _ = cs.c.Write([]byte("0\r\n\r\n"))
	cs.c.Close()
}
