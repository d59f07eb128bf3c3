package docker

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/providers/internal/fit"
)

// OutputEvent is the event type of streamed command output; its data is
// {"stream": "stdout"|"stderr", "data": TEXT}.
const OutputEvent = "docker.output"

// maxChunk bounds the data of one output event.
const maxChunk = 16 << 10

// output is a command's stdout and stderr within a cap of limit bytes
// shared by both: while they fit, all of both is kept; once they do not,
// the start of stdout and the end of stderr (where a failure says what
// went wrong) are, each within half of the cap or what the other leaves,
// as fit.Command cuts an answer, and truncated is set. The rest is
// drained: writes never fail, so the command is never blocked. The first
// limit bytes of the two, as they arrive, are forwarded to a streamer.
// It is safe for concurrent use.
type output struct {
	mu       sync.Mutex
	limit    int64
	head     []byte    // the start of stdout
	tail     *fit.Tail // the end of stderr, at most limit bytes
	outN     int64     // stdout bytes written
	errN     int64     // stderr bytes written
	streamed int64     // bytes forwarded
	s        *streamer
}

// capture returns the output of a command capped at limit bytes, the
// first limit bytes of which are streamed to s (nil: not streamed).
func capture(limit int64, s *streamer) *output {
	limit = max(limit, 0)
	return &output{limit: limit, tail: fit.NewTail(limit), s: s}
}

// Stdout is the writer of the command's stdout.
func (o *output) Stdout() io.Writer { return outputWriter{o, false} }

// Stderr is the writer of the command's stderr.
func (o *output) Stderr() io.Writer { return outputWriter{o, true} }

type outputWriter struct {
	o      *output
	stderr bool
}

func (w outputWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	fwd := p[:min(int64(len(p)), o.limit-o.streamed)]
	o.streamed += int64(len(fwd))
	if w.stderr {
		o.errN += int64(len(p))
		_, _ = o.tail.Write(p)
	} else {
		o.outN += int64(len(p))
		if room := o.limit - min(o.errN, o.limit/2) - int64(len(o.head)); room > 0 {
			o.head = append(o.head, p[:min(int64(len(p)), room)]...)
		}
	}
	o.mu.Unlock()
	if len(fwd) > 0 {
		stream := "stdout"
		if w.stderr {
			stream = "stderr"
		}
		o.s.add(stream, fwd)
	}
	return len(p), nil
}

// Truncated reports whether the output was cut.
func (o *output) Truncated() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outN+o.errN > o.limit
}

// Bytes answers what is kept of stdout and of stderr: all of both when
// they fit in the cap, else the start of stdout and the end of stderr,
// each within half of the cap or what the other leaves, cut between
// characters where they are text.
func (o *output) Bytes() (stdout, stderr []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	head := o.head
	if o.outN+o.errN <= o.limit {
		return bytes.Clone(head), o.tail.Bytes()
	}
	half := o.limit / 2
	roomOut := o.limit - half
	if o.errN <= half {
		roomOut = o.limit - o.errN
	}
	kept := min(o.errN, o.limit)
	k := min(int64(len(head)), roomOut)
	j := min(kept, o.limit-k)
	k = min(int64(len(head)), o.limit-j)
	cut := toolset.RuneCut(head, int(k))
	if int64(cut) == int64(len(head)) && int64(cut) < o.outN {
		// The head was cut as it was written: what followed it is not
		// known, so a character it leaves unfinished is dropped.
		cut -= toolset.IncompleteTail(head[:cut])
	}
	return bytes.Clone(head[:cut]), o.tail.Last(j)
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
