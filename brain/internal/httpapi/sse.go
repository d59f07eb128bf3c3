package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/api"
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
//
// This file holds the stream's handler and its frames; feed.go the feed
// and its fan-out, push.go a stream's writes and its queue, sink.go the
// connections they write to.

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
	behind   bool // records pushed while catching up were dropped
	writing  bool // a push or the writer goroutine is writing
	ended    bool // accepts no more frames; finish after the queue
	closed   bool
	lagged   bool      // ended because the subscriber fell behind
	broken   bool      // a write failed: the body is cut off, not ended
	activity time.Time // last frame queued or written
	lastSeq  uint64    // last recorded event written; owned by the writer
	done     chan struct{}
	onClosed func() // called once the stream closed (whenClosed)
}

// whenClosed calls f once the stream has closed: now if it has.
func (st *stream) whenClosed(f func()) {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		f()
		return
	}
	st.onClosed = f
	st.mu.Unlock()
}

// heartbeatHeader names, on an event stream's response, the interval of
// its heartbeat comments in milliseconds: a client that receives nothing
// for a few of them may take the connection for dead and reconnect.
const heartbeatHeader = "Brain-Heartbeat-Ms"

// heartbeatMs is the heartbeat interval in milliseconds, in decimal.
func (s *Server) heartbeatMs() string {
	return strconv.FormatInt(s.opts.Heartbeat.Milliseconds(), 10)
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
	// The stream of a finished session ends after its catch-up: past
	// session_ended (a failed delete's teardown records) nothing is
	// followed live, and past the end it would never get a frame.
	sum, err := s.opts.Engine.Summary(ctx, id)
	if err != nil {
		s.detach(st)
		s.streams.Done()
		WriteError(w, err)
		return
	}
	terminal := sum.Status == api.StatusEnded || sum.Status == api.StatusFailed
	finished := terminal && after >= sum.LastSequence

	hijacked := false
	if !finished && r.ProtoAtLeast(1, 1) {
		var cs *connSink
		if cs, hijacked = hijack(w, s.opts.StreamWriteTimeout, s.heartbeatMs()); hijacked {
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
		h.Set(heartbeatHeader, s.heartbeatMs())
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
	for {
		caught := st.catchUp(ctx, id)
		st.mu.Lock()
		if caught && st.behind {
			// Records committed meanwhile overran the queue: the
			// journal has them.
			st.behind = false
			st.mu.Unlock()
			continue
		}
		if !caught || terminal {
			st.ended = true
		}
		st.dropWrittenLocked()
		st.catching = false
		st.kickLocked()
		st.mu.Unlock()
		break
	}
	if hijacked {
		detachedTo(w, st)
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

// streamHead answers HEAD of session id's event stream: the head a GET
// would get, and no body (a stream's body is written past the
// ResponseWriter, which drops a HEAD's body on its own).
func (s *Server) streamHead(w http.ResponseWriter, r *http.Request, id string) {
	if _, err := s.opts.Engine.Summary(r.Context(), id); err != nil {
		WriteError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set(heartbeatHeader, s.heartbeatMs())
	w.WriteHeader(http.StatusOK)
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

// dropWrittenLocked drops, as the catch-up ends, the queued frames up to
// the last record that the catch-up has already written: the records
// among them are written, and the live frames, written after those
// records, would come out of their model call (after its end).
func (st *stream) dropWrittenLocked() {
	cut := -1
	for i, fr := range st.queue {
		if fr.seq != 0 && fr.seq <= st.lastSeq {
			cut = i
		}
	}
	if cut < 0 {
		return
	}
	st.queue = slices.Clone(st.queue[cut+1:])
	st.events, st.lives = 0, 0
	for _, fr := range st.queue {
		if fr.seq != 0 {
			st.events++
		} else {
			st.lives++
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
