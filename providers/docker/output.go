package docker

import (
	"bytes"
	"context"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
)

// OutputEvent is the event type of streamed command output; its data is
// {"stream": "stdout"|"stderr", "data": TEXT}.
const OutputEvent = "docker.output"

// maxChunk bounds the data of one output event.
const maxChunk = 16 << 10

// capture keeps the head of a command's stdout and stderr within one byte
// budget shared by both streams, drains the rest, and forwards what it
// keeps to a streamer.
type capture struct {
	mu        sync.Mutex
	left      int64
	out, err  bytes.Buffer
	truncated bool
	stream    *streamer
}

func newCapture(limit int64, s *streamer) *capture {
	return &capture{left: limit, stream: s}
}

type captureWriter struct {
	c    *capture
	name string
	buf  *bytes.Buffer
}

func (c *capture) writers() (stdout, stderr io.Writer) {
	return &captureWriter{c, "stdout", &c.out}, &captureWriter{c, "stderr", &c.err}
}

func (w *captureWriter) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	keep := p
	if int64(len(keep)) > c.left {
		keep = keep[:c.left]
		c.truncated = true
	}
	c.left -= int64(len(keep))
	w.buf.Write(keep)
	c.mu.Unlock()
	if len(keep) > 0 {
		c.stream.add(w.name, keep)
	}
	return len(p), nil
}

func (c *capture) result() (stdout, stderr string, truncated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return text(c.out.Bytes()), text(c.err.Bytes()), c.truncated
}

// text returns b as a string, replacing invalid UTF-8 (a cut in the middle
// of a character included).
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
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
			c.Data = text([]byte(c.Data))
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
