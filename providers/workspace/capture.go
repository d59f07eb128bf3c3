package workspace

import (
	"context"
	"sync"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// OutputEvent is the event type of streamed command output; its data is
// {"stream": "stdout"|"stderr", "data": TEXT, "skipped"?: N}, where skipped
// counts bytes of the stream not streamed because the emitter fell behind
// (an event may carry that count alone, with empty data).
const OutputEvent = "workspace.output"

const (
	maxEventBytes   = 16 << 10  // data per emitted event
	maxPendingBytes = 256 << 10 // output waiting to be emitted
)

type chunk struct {
	stream string
	data   []byte
}

// emitter streams output chunks as events through the invocation's emit
// service, in order, one request at a time, never blocking the writers:
// when more than maxPendingBytes wait, further bytes are counted as skipped.
// The first failed emission stops streaming; the command goes on.
type emitter struct {
	inv *envsdk.Invocation
	ctx context.Context

	mu      sync.Mutex
	pending []chunk
	size    int
	skipped map[string]int
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	err     error
}

// newEmitter returns nil (a no-op emitter) when emit is not granted.
func newEmitter(ctx context.Context, inv *envsdk.Invocation) *emitter {
	if !inv.Granted("emit") {
		return nil
	}
	e := &emitter{inv: inv, ctx: ctx, skipped: map[string]int{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go e.loop()
	return e
}

func (e *emitter) add(stream string, p []byte) {
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.closed || e.err != nil {
		e.mu.Unlock()
		return
	}
	if e.size+len(p) > maxPendingBytes {
		e.skipped[stream] += len(p)
	} else {
		e.pending = append(e.pending, chunk{stream, append([]byte(nil), p...)})
		e.size += len(p)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// close flushes what is pending and waits for the last emission.
func (e *emitter) close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *emitter) loop() {
	defer close(e.done)
	carry := map[string][]byte{} // an incomplete UTF-8 sequence per stream
	for {
		select {
		case <-e.wake:
		case <-e.ctx.Done():
			e.mu.Lock()
			e.err = e.ctx.Err()
			e.mu.Unlock()
			return
		}
		e.mu.Lock()
		batch, closed := e.pending, e.closed
		skipped := e.skipped
		e.pending, e.size, e.skipped = nil, 0, map[string]int{}
		e.mu.Unlock()

		events := coalesce(batch, carry, closed)
		for i, ev := range events {
			if n := skipped[ev.Stream]; n > 0 {
				events[i].Skipped = n
				delete(skipped, ev.Stream)
			}
		}
		// Bytes skipped on a stream none of whose bytes were pending are
		// counted in an event of their own.
		for _, stream := range []string{"stdout", "stderr"} {
			if n := skipped[stream]; n > 0 {
				events = append(events, outputEvent{Stream: stream, Skipped: n})
			}
		}
		for _, ev := range events {
			if _, err := e.inv.Emit(e.ctx, OutputEvent, ev); err != nil {
				e.mu.Lock()
				e.err = err
				e.mu.Unlock()
				return
			}
		}
		if closed {
			return
		}
	}
}

type outputEvent struct {
	Stream  string `json:"stream"`
	Data    string `json:"data"`
	Skipped int    `json:"skipped,omitempty"`
}

// coalesce joins consecutive chunks of a stream into events of at most
// maxEventBytes, cut at UTF-8 boundaries; an incomplete trailing sequence is
// carried to the next batch unless final.
func coalesce(batch []chunk, carry map[string][]byte, final bool) []outputEvent {
	var out []outputEvent
	flush := func(stream string, data []byte, last bool) {
		data = append(carry[stream], data...)
		carry[stream] = nil
		if !last {
			if cut := toolset.IncompleteTail(data); cut > 0 {
				carry[stream] = append([]byte(nil), data[len(data)-cut:]...)
				data = data[:len(data)-cut]
			}
		}
		for len(data) > 0 {
			n := toolset.RuneCut(data, maxEventBytes)
			out = append(out, outputEvent{Stream: stream, Data: string(data[:n])})
			data = data[n:]
		}
	}
	var cur []byte
	stream := ""
	for _, c := range batch {
		if c.stream != stream && len(cur) > 0 {
			flush(stream, cur, false)
			cur = nil
		}
		stream = c.stream
		cur = append(cur, c.data...)
	}
	if len(cur) > 0 {
		flush(stream, cur, final)
	}
	if final {
		for s, rest := range carry {
			if len(rest) > 0 {
				flush(s, nil, true)
			}
		}
	}
	return out
}
