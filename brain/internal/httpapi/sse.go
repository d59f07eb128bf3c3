package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Event streams.
//
// Every stream of a session shares one feed: a single engine subscription
// whose frames are encoded once. The frames a feed has received together
// (a commit publishes its records together) form a batch, encoded once
// more as one chunk of the chunked body; the feed hands the batch to
// every stream, the streams split among GOMAXPROCS workers. Pushing never
// blocks, so a stalled reader never slows the feed or commits.
//
// A stream has no goroutine of its own while idle: an HTTP/1.1
// connection is taken over (hijacked) once the response head is written.
// A push to an idle stream on a TCP or Unix connection writes the shared
// chunk itself with one non-blocking write(2) (syscall.RawConn.Write, one
// attempt): when the socket takes it all, which is the common case, the
// push is done. Only a stream whose socket buffer is full (or that is
// still catching up) gets a writer goroutine, which finishes that write
// with a deadline and then drains the frames queued meanwhile, written as
// one chunk with one write; a stream whose queue holds more than
// Options.MaxLiveBacklog records ends (lagged). Other connections (TLS,
// HTTP/2) write every batch from such a goroutine; HTTP/2 ones keep their
// handler goroutine and write through the ResponseWriter.
//
// An idle stream keeps about 1 KiB; its handshake leaves many times that
// as garbage, which the server returns to the operating system once a
// burst of stream openings is over (burst.go).

// streamWriteTimeout is the default of Options.StreamWriteTimeout, which
// bounds one write to a stream subscriber; a reader that stalls longer
// loses its stream (on a hijacked connection the deadline is moved only
// once it is less than half of this away, so the bound there is between
// half of it and all of it).
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

// batch is the frames a feed fans out at once, and their encoding as one
// chunk of a chunked body.
type batch struct {
	frames []*frame
	chunk  []byte
}

func newBatch(frames []*frame) *batch {
	return &batch{frames: frames, chunk: appendChunk(nil, frames)}
}

var keepAliveBatch = newBatch([]*frame{{b: []byte(": keep-alive\n\n")}})

// appendChunk appends frames to dst as one chunk of a chunked body.
func appendChunk(dst []byte, frames []*frame) []byte {
	n := 0
	for _, fr := range frames {
		n += len(fr.b)
	}
	if n == 0 {
		return dst
	}
	dst = slices.Grow(dst, n+12)
	dst = strconv.AppendInt(dst, int64(n), 16)
	dst = append(dst, '\r', '\n')
	for _, fr := range frames {
		dst = append(dst, fr.b...)
	}
	return append(dst, '\r', '\n')
}

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

// sink is where a stream's bytes go.
type sink interface {
	// write writes frames within the deadline.
	write(frames []*frame, deadline time.Time) error
	// finish ends the response and releases the connection; after a
	// failed write (broken) it closes the connection without ending the
	// body, so that the client sees the stream cut off, not complete.
	finish(broken bool)
}

// stream is one subscriber.
type stream struct {
	s      *Server
	f      *feed
	sink   sink
	direct *connSink // the sink when it takes non-blocking writes, else nil

	mu       sync.Mutex
	queue    []*frame
	events   int // recorded events in queue
	lives    int // other frames in queue
	catching bool
	writing  bool // a push or the writer goroutine is writing
	ended    bool // accepts no more frames; finish after the queue
	closed   bool
	lagged   bool      // ended because the subscriber fell behind
	broken   bool      // a write failed: the body is cut off, not ended
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
	s.handshakes.begin()
	handshake := true
	defer func() {
		if handshake {
			s.handshakes.end()
		}
	}()
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
		var cs *connSink
		if cs, hijacked = hijack(w, s.opts.StreamWriteTimeout); hijacked {
			// The feed may see st already: the sink is published under
			// st.mu, and used only once catching is over.
			st.mu.Lock()
			st.sink = cs
			if cs.raw != nil {
				st.direct = cs
			}
			st.mu.Unlock()
		}
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
		st.mu.Lock()
		st.sink = &writerSink{w: w, rc: rc}
		st.mu.Unlock()
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
	handshake = false
	s.handshakes.end()
	select {
	case <-st.done:
	case <-ctx.Done():
		st.end(true)
		<-st.done
	}
	st.mu.Lock()
	broken := st.broken
	st.mu.Unlock()
	if broken {
		// A write failed part way: end the connection without the
		// body's last chunk.
		panic(http.ErrAbortHandler)
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
			st.markBroken()
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
	return time.Now().Add(st.s.opts.StreamWriteTimeout)
}

// push hands a batch to the stream; it never blocks. An idle stream with
// a direct sink writes it at once, without waiting; otherwise the frames
// are queued for the writer goroutine.
func (st *stream) push(b *batch, backlog int) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	if st.catching || st.writing || len(st.queue) > 0 || st.direct == nil {
		st.queueLocked(b.frames, backlog)
		st.kickLocked()
		st.mu.Unlock()
		return
	}
	st.writing = true
	st.activity = time.Now()
	st.mu.Unlock()

	// The writer owns lastSeq while writing is set.
	chunk, last, seq := b.chunk, false, st.lastSeq
	if out, shared := st.fresh(b.frames); !shared {
		chunk = appendChunk(nil, out)
		last = len(out) > 0 && out[len(out)-1].last
		if len(out) > 0 {
			seq = lastSeqOf(out, seq)
		}
	} else {
		last = b.frames[len(b.frames)-1].last
		seq = lastSeqOf(b.frames, seq)
	}
	n, err := 0, error(nil)
	if len(chunk) > 0 {
		n, err = st.direct.tryWrite(chunk)
	}
	if err != nil {
		st.markBroken()
		go st.close()
		return
	}
	st.lastSeq = seq
	if n < len(chunk) {
		// The socket buffer is full: a goroutine finishes the write.
		st.s.fullWrites.Add(1)
		go st.complete(chunk[n:], last)
		return
	}
	if last {
		go st.close()
		return
	}
	st.mu.Lock()
	st.writing = false
	st.kickLocked() // ended meanwhile
	st.mu.Unlock()
}

// fresh answers the frames of a batch this stream has to write: those not
// already written by the catch-up, up to the end of the session; shared
// reports that they are all of the batch.
func (st *stream) fresh(frames []*frame) (out []*frame, shared bool) {
	for i, fr := range frames {
		if (fr.seq != 0 && fr.seq <= st.lastSeq) || (fr.last && i < len(frames)-1) {
			out = make([]*frame, 0, len(frames))
			for _, fr := range frames {
				if fr.seq != 0 && fr.seq <= st.lastSeq {
					continue
				}
				out = append(out, fr)
				if fr.last {
					break
				}
			}
			return out, false
		}
	}
	return frames, true
}

// lastSeqOf answers the sequence of the last recorded event of frames, or
// seq when there is none.
func lastSeqOf(frames []*frame, seq uint64) uint64 {
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].seq != 0 {
			return frames[i].seq
		}
	}
	return seq
}

// queueLocked queues frames for the writer goroutine; a stream that would
// hold more than backlog records ends (lagged).
func (st *stream) queueLocked(frames []*frame, backlog int) {
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
}

// complete finishes, on the writer goroutine, a write the socket did not
// take at once, then drains the queue.
func (st *stream) complete(rest []byte, last bool) {
	if err := st.direct.writeBytes(rest, st.deadline()); err != nil || last {
		if err != nil {
			st.markBroken()
		}
		st.close()
		return
	}
	st.mu.Lock()
	st.activity = time.Now()
	st.mu.Unlock()
	st.drain()
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
				st.markBroken()
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

// markBroken records that a write to the stream failed.
func (st *stream) markBroken() {
	st.mu.Lock()
	st.broken = true
	st.mu.Unlock()
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
	lagged, broken := st.lagged, st.broken
	st.mu.Unlock()
	st.s.observer().StreamClosed(lagged)
	st.s.detach(st)
	st.sink.finish(broken)
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

// finish leaves the end of the response to the handler, which aborts it
// when the stream broke.
func (ws *writerSink) finish(bool) {}

// connSink writes the chunked body of a hijacked HTTP/1.1 connection.
type connSink struct {
	c        net.Conn
	raw      syscall.RawConn // the socket, for non-blocking writes; nil for other connections (TLS)
	deadline time.Time       // the write deadline set on c; zero for none
	timeout  time.Duration   // Options.StreamWriteTimeout
}

// hijack takes the connection over and writes the response head.
func hijack(w http.ResponseWriter, timeout time.Duration) (*connSink, bool) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	_ = c.SetDeadline(time.Time{})
	if brw != nil && brw.Writer.Buffered() > 0 {
		_ = brw.Flush()
	}
	cs := &connSink{c: c, timeout: timeout}
	inner := c
	if lc, ok := c.(*limitConn); ok {
		inner = lc.Conn
	}
	// Only a plain socket: bytes written to it go to the client as they are.
	switch sc := inner.(type) {
	case *net.TCPConn:
		cs.raw, _ = sc.SyscallConn()
	case *net.UnixConn:
		cs.raw, _ = sc.SyscallConn()
	}
	head := make([]byte, 0, 200)
	head = append(head, "HTTP/1.1 200 OK\r\n"+
		"Cache-Control: no-store\r\n"+
		"Connection: close\r\n"+
		"Content-Type: text/event-stream\r\n"+
		"Date: "...)
	head = time.Now().UTC().AppendFormat(head, http.TimeFormat)
	head = append(head, "\r\n"+
		"Transfer-Encoding: chunked\r\n"+
		"X-Accel-Buffering: no\r\n\r\n"...)
	if err := cs.writeBytes(head, time.Now().Add(timeout)); err != nil {
		c.Close() // the first write fails and ends the stream
	}
	return cs, true
}

func (cs *connSink) write(frames []*frame, deadline time.Time) error {
	return cs.writeBytes(appendChunk(nil, frames), deadline)
}

// writeBytes writes b within the deadline.
func (cs *connSink) writeBytes(b []byte, deadline time.Time) error {
	if len(b) == 0 {
		return nil
	}
	// Moving the deadline costs a timer update; a deadline still at least
	// half the write timeout away is kept (a stalled reader is then cut
	// off between half and all of the timeout), an earlier one (the
	// server stopping) is always set.
	if cs.deadline.IsZero() || deadline.Before(cs.deadline) || time.Until(cs.deadline) < cs.timeout/2 {
		_ = cs.c.SetWriteDeadline(deadline)
		cs.deadline = deadline
	}
	_, err := cs.c.Write(b)
	return err
}

// tryWrite writes what the socket takes of b now, with one write(2) that
// never waits, and answers how much that was.
func (cs *connSink) tryWrite(b []byte) (int, error) {
	if !cs.deadline.IsZero() && !time.Now().Before(cs.deadline) {
		// A deadline left by an earlier write has passed while the stream
		// was idle; this write does not wait, so needs none.
		_ = cs.c.SetWriteDeadline(time.Time{})
		cs.deadline = time.Time{}
	}
	var (
		n    int
		werr error
	)
	err := cs.raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if werr != syscall.EINTR {
				return true
			}
		}
	})
	if n < 0 {
		n = 0
	}
	if err != nil {
		return n, err
	}
	if werr != nil && !errors.Is(werr, syscall.EAGAIN) {
		return n, werr
	}
	return n, nil
}

func (cs *connSink) finish(broken bool) {
	if !broken {
		_ = cs.c.SetWriteDeadline(time.Now().Add(stopGrace))
		_, _ = cs.c.Write([]byte("0\r\n\r\n"))
	}
	cs.c.Close()
}
