package docker

import (
	"context"
	"sync"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// OutputEvent is the event type of streamed command output; its data is
// {"stream": "stdout"|"stderr", "data": TEXT}.
const OutputEvent = "docker.output"

// maxChunk bounds the data of one output event.
const maxChunk = 16 << 10

// capture returns stdout and stderr writers that keep the head of a
// command's output within one budget of limit bytes shared by both
// streams, drain the rest, and forward what they keep to s.
func capture(limit int64, s *streamer) (stdout, stderr *toolset.Head) {
	b := toolset.NewBudget(limit)
	return b.Head(func(p []byte) { s.add("stdout", p) }), b.Head(func(p []byte) { s.add("stderr", p) })
}

// streamer emits output as OutputEvent events through the execution's emit
// service. It coalesces what arrives while an emit is in flight, so a fast
// producer never waits for Brain; flush waits until everything added was
// emitted (or emission failed), so that every event precedes the finish.
// Events are cut at UTF-8 boundaries: a character split across two writes
// of the command (or two frames of the Engine) is held back until it is
// whole, so that the events of a stream join into its output.
type streamer struct {
	inv *envsdk.Invocation
	ctx context.Context

	mu      sync.Mutex
	pending []chunk
	carry   map[string][]byte // an unfinished UTF-8 sequence ending each stream
	failed  bool
	wake    chan struct{}
	done    chan struct{}
	closed  bool
}

type chunk struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// newStreamer returns nil (a no-op) when the grant does not list emit.
func newStreamer(ctx context.Context, inv *envsdk.Invocation) *streamer {
	if !inv.Granted("emit") {
		return nil
	}
	s := &streamer{inv: inv, ctx: ctx, carry: map[string][]byte{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *streamer) add(stream string, p []byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.failed || s.closed {
		s.mu.Unlock()
		return
	}
	data := append(s.carry[stream], p...)
	cut := toolset.IncompleteTail(data)
	s.carry[stream] = append([]byte(nil), data[len(data)-cut:]...)
	s.queue(stream, data[:len(data)-cut])
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// queue appends data to the pending chunks of stream, joining the last one
// while it has room, in chunks of at most maxChunk bytes cut between
// characters. Callers hold s.mu.
func (s *streamer) queue(stream string, data []byte) {
	for len(data) > 0 {
		if n := len(s.pending); n > 0 && s.pending[n-1].Stream == stream {
			if k := toolset.RuneCut(data, maxChunk-len(s.pending[n-1].Data)); k > 0 {
				s.pending[n-1].Data += string(data[:k])
				data = data[k:]
				continue
			}
		}
		k := toolset.RuneCut(data, maxChunk)
		s.pending = append(s.pending, chunk{stream, string(data[:k])})
		data = data[k:]
	}
}

func (s *streamer) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		closed := s.closed
		s.mu.Unlock()
		for _, c := range batch {
			c.Data = toolset.Text([]byte(c.Data))
			if _, err := s.inv.Emit(s.ctx, OutputEvent, c); err != nil {
				s.mu.Lock()
				s.failed = true
				s.pending = nil
				s.mu.Unlock()
				return
			}
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-s.wake
		}
	}
}

// flush emits what is pending and stops the streamer.
func (s *streamer) flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.failed && !s.closed {
		// What never became whole is sent as it is (as in the output).
		for _, stream := range []string{"stdout", "stderr"} {
			s.queue(stream, s.carry[stream])
		}
		s.carry = nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}
