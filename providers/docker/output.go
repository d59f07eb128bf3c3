package docker

import (
	"bytes"
	"context"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/toolset"
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
	head     []byte // the start of stdout
	tail     []byte // the end of stderr (see keepTail)
	outN     int64  // stdout bytes written
	errN     int64  // stderr bytes written
	streamed int64  // bytes forwarded
	s        *streamer
}

// capture returns the output of a command capped at limit bytes, the
// first limit bytes of which are streamed to s (nil: not streamed).
func capture(limit int64, s *streamer) *output {
	return &output{limit: max(limit, 0), s: s}
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
		o.tail = keepTail(o.tail, p, o.limit-min(o.outN, o.limit-o.limit/2))
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

// keepTail appends p to tail and answers what is to be kept of it to have
// its last n bytes: the buffer is compacted only once it holds twice that,
// so that keeping the end of a long stream copies each byte a few times at
// most.
func keepTail(tail, p []byte, n int64) []byte {
	if int64(len(p)) >= n {
		return append(tail[:0], p[int64(len(p))-n:]...)
	}
	tail = append(tail, p...)
	if int64(len(tail)) > 2*n {
		tail = append(tail[:0], tail[int64(len(tail))-n:]...)
	}
	return tail
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
	tail := o.tail[max(int64(len(o.tail))-min(o.errN, o.limit), 0):]
	if o.outN+o.errN <= o.limit {
		return bytes.Clone(head), bytes.Clone(tail)
	}
	half := o.limit / 2
	roomOut := o.limit - half
	if o.errN <= half {
		roomOut = o.limit - o.errN
	}
	k := min(int64(len(head)), roomOut)
	j := min(int64(len(tail)), o.limit-k)
	k = min(int64(len(head)), o.limit-j)
	stdout = head[:toolset.RuneCut(head, int(k))]
	stderr = tail[int64(len(tail))-j:]
	if j < o.errN {
		stderr = stderr[runeStart(stderr):]
	}
	return bytes.Clone(stdout), bytes.Clone(stderr)
}

// runeStart is where the first character of data, the end of a longer
// text, begins: past the bytes of a character the cut left unfinished.
func runeStart(data []byte) int {
	for i := 0; i < len(data) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(data[i]) {
			return i
		}
	}
	return 0
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
