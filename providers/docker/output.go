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
type streamer struct {
	inv *envsdk.Invocation
	ctx context.Context

	mu      sync.Mutex
	pending []chunk
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
	s := &streamer{inv: inv, ctx: ctx, wake: make(chan struct{}, 1), done: make(chan struct{})}
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
	if n := len(s.pending); n > 0 && s.pending[n-1].Stream == stream && len(s.pending[n-1].Data)+len(p) <= maxChunk {
		s.pending[n-1].Data += string(p)
	} else {
		for len(p) > maxChunk {
			s.pending = append(s.pending, chunk{stream, string(p[:maxChunk])})
			p = p[maxChunk:]
		}
		s.pending = append(s.pending, chunk{stream, string(p)})
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
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
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}
