package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// LiveFrame is a live-only frame (model_output, ...): never journalled,
// without a sequence.
type LiveFrame struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	call uint64          // the model_call_started sequence it belongs to
}

// Frame is one item of a subscription: a committed public event or a
// live-only frame.
type Frame struct {
	Event *api.Event
	Live  *LiveFrame
}

// liveBuffer is how many live frames wait for a slow subscriber before
// further ones are dropped (live frames are best effort).
const liveBuffer = 256

// hub fans live frames out to a session's subscribers.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
}

func (h *hub) init() { h.subs = map[string]map[*Subscription]struct{}{} }

func (h *hub) add(id string, s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[id] == nil {
		h.subs[id] = map[*Subscription]struct{}{}
	}
	h.subs[id][s] = struct{}{}
}

func (h *hub) remove(id string, s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[id], s)
	if len(h.subs[id]) == 0 {
		delete(h.subs, id)
	}
}

func (h *hub) publish(id string, f LiveFrame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[id] {
		select {
		case s.live <- f:
		default:
		}
	}
}

// watched reports whether the session has subscribers.
func (h *hub) watched(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[id]) > 0
}

// publishDelta sends the live model_output frame {model_call_sequence,
// index, delta} of a delta, index being its place among the deltas of the
// call, from 0 (counted whether or not the session has subscribers), so
// that a reader whose frames were dropped can tell where.
func (h *hub) publishDelta(id string, seq uint64, index uint64, d model.Delta) {
	if !h.watched(id) {
		return
	}
	data, _ := json.Marshal(map[string]any{"model_call_sequence": seq, "index": index, "delta": d.Text})
	h.publish(id, LiveFrame{Type: api.LiveModelOutput, Data: data, call: seq})
}

// publishRequest sends the live model_request frame of a model call:
// {model_call_sequence, input_bytes, media_inputs}, input_bytes being the
// size of the request's JSON and media_inputs the media kinds (image,
// file) its messages carry, in order of first appearance.
func (h *hub) publishRequest(id string, seq uint64, req api.ModelRequest) {
	if !h.watched(id) {
		return
	}
	raw, _ := json.Marshal(req)
	media := []string{}
	seen := map[string]bool{}
	note := func(kind string) {
		if !seen[kind] {
			seen[kind] = true
			media = append(media, kind)
		}
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == api.BlockImage || b.Type == api.BlockFile {
				note(b.Type)
			}
			for _, md := range b.Media {
				note(md.Type)
			}
		}
	}
	data, _ := json.Marshal(map[string]any{"model_call_sequence": seq, "input_bytes": len(raw), "media_inputs": media})
	h.publish(id, LiveFrame{Type: api.LiveModelRequest, Data: data, call: seq})
}

// publishUsage sends the live model_usage frame {model_call_sequence,
// usage} of a finished model call.
func (h *hub) publishUsage(id string, seq uint64, usage api.Usage) {
	if !h.watched(id) {
		return
	}
	data, _ := json.Marshal(map[string]any{"model_call_sequence": seq, "usage": usage})
	h.publish(id, LiveFrame{Type: api.LiveModelUsage, Data: data, call: seq})
}

// Subscription follows a session's public events after a cursor (first
// those already committed, then live ones) interleaved with live model
// frames. It ends with an error wrapping journal.ErrLagged when the reader
// falls more than the backlog behind; reconnect from the last sequence.
//
// Order: the live frames of a model call (model_request, model_output,
// model_usage) come after the model_call_started event they name and
// before that call's model_call_ended or model_call_failed. The engine
// publishes them after the started record is committed and before the
// terminal one is, and the subscription holds a frame until the record
// it names has been delivered, and lets frames already published go
// before any record received after them.
type Subscription struct {
	e      *Engine
	id     string
	jsub   *journal.Subscription
	recs   chan journal.Record
	errc   chan error
	live   chan LiveFrame
	cancel context.CancelFunc
	once   sync.Once

	// Owned by Next.
	delivered uint64          // last record sequence handed out (or the cursor)
	held      *journal.Record // received, not yet handed out
	pending   []LiveFrame     // received, waiting for their started record
}

// Subscribe opens a subscription of session id after the cursor. backlog
// bounds the live records buffered (0 selects the journal default).
func (e *Engine) Subscribe(ctx context.Context, id string, after uint64, backlog int) (*Subscription, error) {
	if _, err := e.Summary(ctx, id); err != nil {
		return nil, err
	}
	jsub, err := e.store.Subscribe(ctx, id, after, backlog)
	if err != nil {
		return nil, fmt.Errorf("session %s: subscribe: %w", id, err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Subscription{e: e, id: id, jsub: jsub, recs: make(chan journal.Record), errc: make(chan error, 1),
		live: make(chan LiveFrame, liveBuffer), cancel: cancel, delivered: after}
	e.hub.add(id, s)
	go func() {
		for {
			r, err := jsub.Next(pctx)
			if err != nil {
				s.errc <- err
				return
			}
			select {
			case s.recs <- r:
			case <-pctx.Done():
				s.errc <- pctx.Err()
				return
			}
		}
	}()
	return s, nil
}

// Next answers the next frame: a public event or a live frame, in the
// order the Subscription documents.
func (s *Subscription) Next(ctx context.Context) (Frame, error) {
	for {
		// Frames published before the held record was committed are in
		// s.live by now: they go first, once their started record is out.
		s.drainLive()
		if f, ok := s.takeReady(); ok {
			return Frame{Live: &f}, nil
		}
		if r := s.held; r != nil {
			s.held = nil
			s.delivered = r.Sequence
			if ev, ok := s.e.project(s.id, *r); ok {
				return Frame{Event: &ev}, nil
			}
			continue
		}
		select {
		case r := <-s.recs:
			s.held = &r
		case f := <-s.live:
			s.hold(f)
		case err := <-s.errc:
			s.errc <- err
			if errors.Is(err, journal.ErrNotFound) {
				err = fmt.Errorf("session %s: %w", s.id, ErrNotFound)
			}
			return Frame{}, err
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
	}
}

// drainLive moves the live frames already published to pending.
func (s *Subscription) drainLive() {
	for {
		select {
		case f := <-s.live:
			s.hold(f)
		default:
			return
		}
	}
}

// hold queues a live frame; past liveBuffer the oldest is dropped (live
// frames are best effort).
func (s *Subscription) hold(f LiveFrame) {
	if len(s.pending) == liveBuffer {
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, f)
}

// takeReady answers the oldest pending frame whose started record has
// been delivered.
func (s *Subscription) takeReady() (LiveFrame, bool) {
	for i, f := range s.pending {
		if f.call <= s.delivered {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return f, true
		}
	}
	return LiveFrame{}, false
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.e.hub.remove(s.id, s)
		s.cancel()
		s.jsub.Close()
	})
}
