package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// EventsOption adjusts Events.
type EventsOption func(*eventsOpts)

type eventsOpts struct {
	follow bool
	live   bool
}

// Follow streams events as they are committed (server-sent events) instead
// of reading the pages that exist.
func Follow() EventsOption { return func(o *eventsOpts) { o.follow = true } }

// LiveFrames also yields live-only frames of a followed stream (the
// request, output deltas and usage of a model call): events with Sequence
// 0, EventType api.LiveModelRequest, api.LiveModelOutput or
// api.LiveModelUsage and the frame payload as Data. They are never
// journalled and never move the cursor.
func LiveFrames() EventsOption { return func(o *eventsOpts) { o.live = true } }

// Events iterates over the session's public events after the cursor. By
// default it reads pages until none are left; with Follow it streams and
// reconnects from the last yielded sequence (also when the stream goes
// silent for three of its heartbeat intervals while it is read, the loop's
// time with an event not counted, or its request is not answered within
// them) until the session ends
// (session_ended or session_creation_failed) or ctx ends. A connection
// that cannot be made, or is answered with a retryable error (a server
// draining or restarting), is tried again with pauses growing to 2 s;
// after FollowGiveUp without a connection the error is yielded. When ctx
// ends while attempts fail, the error yielded carries the latest
// attempt's besides ctx's (errors.As finds the *api.ApiError of an
// answer, as Host.Connected's does). A 200
// answer that is not an event stream yields ErrNotEventStream, and an
// event that does not decode, lacks its sequence or type, whose
// sequence is not its frame's id or whose type is not its frame's event
// name (or a line or data longer than 80 MiB) ErrMalformedEvent, without
// a reconnection. An
// error is yielded once, and ends the iteration.
func (s *Session) Events(ctx context.Context, after uint64, opts ...EventsOption) iter.Seq2[api.Event, error] {
	var o eventsOpts
	for _, fn := range opts {
		fn(&o)
	}
	if o.follow {
		return s.follow(ctx, after, o.live)
	}
	return func(yield func(api.Event, error) bool) {
		cursor := after
		for {
			r, err := s.c.do(ctx, http.MethodGet, s.path("/events?after="+strconv.FormatUint(cursor, 10)), nil, false, []CallOption{answers[api.EventPage]()})
			if err != nil {
				yield(api.Event{}, err)
				return
			}
			page, err := decode[api.EventPage](r)
			if err != nil {
				yield(api.Event{}, err)
				return
			}
			last := cursor
			for _, ev := range page.Events {
				if ev.Sequence <= last {
					// Brain answers the events after the cursor, in
					// ascending order: a page that repeats one (a
					// cache in front of Brain that ignores the
					// query) would yield it twice, and hide the
					// events that follow.
					yield(api.Event{}, fmt.Errorf("%w: the page after %d holds event %d after event %d", ErrMalformedEvent, cursor, ev.Sequence, last))
					return
				}
				last = ev.Sequence
				if !yield(ev, nil) {
					return
				}
			}
			if len(page.Events) == 0 || page.NextCursor <= cursor {
				return
			}
			cursor = page.NextCursor
		}
	}
}

// FollowGiveUp is how long a followed stream keeps trying to connect
// again before it yields the error: long enough for a server to restart.
const FollowGiveUp = 30 * time.Second

// followPause is the first pause before a stream connects again, and
// followMaxPause the longest.
const (
	followPause    = 50 * time.Millisecond
	followMaxPause = 2 * time.Second
)

// errStreamEnded says a stream reached a terminal event.
var errStreamEnded = errors.New("client: session ended")

func (s *Session) follow(ctx context.Context, after uint64, live bool) iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		if s.c.closed.Load() {
			yield(api.Event{}, ErrClosed)
			return
		}
		ctx, done := s.c.bind(ctx)
		defer done()
		cursor := after
		pause := time.Duration(0)
		var failingSince time.Time // the first of the connections failing in a row
		// refused is the error of the latest attempt to connect while
		// attempts fail in a row (a retryable answer, a refused
		// connection): ctx ending meanwhile yields it with ctx's error.
		var refused error
		for {
			established, progressed, err := s.streamOnce(ctx, &cursor, live, yield)
			switch {
			case established:
				refused = nil
			case err != nil && ctx.Err() == nil:
				refused = err
			}
			switch {
			case errors.Is(err, errStreamEnded), errors.Is(err, errStopped):
				return
			case err != nil:
				var ae *api.ApiError
				if ctx.Err() != nil {
					yield(api.Event{}, s.c.closedErr(notConnected(err, refused)))
					return
				}
				if (errors.As(err, &ae) && !ae.Retryable) || errors.Is(err, ErrClosed) || errors.Is(err, ErrMalformedEvent) || errors.Is(err, ErrNotEventStream) {
					yield(api.Event{}, s.c.closedErr(err))
					return
				}
			}
			if !progressed && s.finishedAt(ctx, cursor) {
				// The session ended at or before the cursor: the server
				// closes such a stream at once, and there is nothing more
				// to follow.
				return
			}
			switch {
			case progressed:
				pause, failingSince = 0, time.Time{}
			case established:
				// A stream that ended with nothing (a proxy's bound on a
				// connection's life): connect again, soon.
				failingSince = time.Time{}
				pause = min(max(2*pause, followPause), followMaxPause)
			default:
				if failingSince.IsZero() {
					failingSince = time.Now()
				} else if time.Since(failingSince) >= FollowGiveUp {
					yield(api.Event{}, s.c.closedErr(fmt.Errorf("client: event stream: no connection for %v: %w", FollowGiveUp, err)))
					return
				}
				pause = min(max(2*pause, followPause), followMaxPause)
			}
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				yield(api.Event{}, s.c.closedErr(notConnected(ctx.Err(), refused)))
				return
			}
		}
	}
}

// notConnected answers err, with which ctx ended a followed stream, and
// also the error of the latest attempt to connect (refused) when attempts
// were failing: errors.As finds the *api.ApiError of a server's refusal,
// errors.Is ctx's error.
func notConnected(err, refused error) error {
	if refused == nil {
		return err
	}
	return fmt.Errorf("client: event stream: not connected, its last attempt failed: %w: %w", refused, err)
}

var errStopped = errors.New("client: consumer stopped")

// finishedAt reports whether the session has ended (or failed) with no
// event after cursor.
func (s *Session) finishedAt(ctx context.Context, cursor uint64) bool {
	// Sent once: the stream's own retries pace the reconnections.
	r, err := s.c.do(ctx, http.MethodGet, s.path(""), nil, false, []CallOption{sendOnce, answers[api.SessionSummary]()})
	if err != nil {
		return false
	}
	sum, err := decodeSummary(r)
	return err == nil && (sum.Status == api.StatusEnded || sum.Status == api.StatusFailed) && cursor >= sum.LastSequence
}

// ErrMalformedEvent reports an event or live frame on a followed stream
// whose data does not decode (an event without its sequence or type
// included, or whose sequence is not its frame's id or whose type is not
// its frame's event name), or a line of the stream or an event's data longer than the
// client's bound (80 MiB): the stream ends with it, without a
// reconnection (the server would send the same bytes again). An events
// page that holds an event at or before its cursor, or events out of
// order, ends Events (without Follow) with it too.
var ErrMalformedEvent = errors.New("client: malformed event")

// streamOnce reads one SSE connection, advancing *cursor past every event
// it yields. It answers whether the stream was established (answered 200),
// whether any event arrived, and why it stopped.
func (s *Session) streamOnce(ctx context.Context, cursor *uint64, live bool, yieldTo func(api.Event, error) bool) (established, progressed bool, err error) {
	if s.c.closed.Load() {
		return false, false, ErrClosed
	}
	// The connection has a context of its own, cancelled when the stream
	// goes silent: the caller's ctx goes on.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, s.c.base+s.path("/events?after="+strconv.FormatUint(*cursor, 10)), nil)
	if err != nil {
		return false, false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	s.c.authorize(req)
	// A request that is not answered within the heartbeat intervals a
	// stream may stay silent went the way of a silent stream (an idle
	// connection a NAT forgot takes it and never answers).
	silent := s.c.silenced(cancel)
	stopWaiting := s.c.awaitAnswer(silent)
	resp, err := s.c.hc.Do(req)
	stopWaiting()
	if err != nil {
		if errors.Is(context.Cause(sctx), errSilent) && ctx.Err() == nil {
			return false, false, fmt.Errorf("client: event stream: no answer: %w", errSilent)
		}
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := readError(resp.Body, s.c.token)
		return false, false, apiError(resp.StatusCode, b)
	}
	if err := checkEventStream(resp.Header); err != nil {
		return false, false, err
	}
	body, watch := s.c.watchHeartbeat(sctx, silent, resp.Header, resp.Body)
	defer watch.stop()
	// The consumer's time with an event is not the stream's silence.
	yield := func(ev api.Event, err error) bool {
		watch.pause()
		defer watch.resume()
		return yieldTo(ev, err)
	}
	maxLine := s.c.lineBound()
	err = scanSSEMax(body, maxLine, func(id, event string, data []byte) error {
		if id == "" && !live {
			return nil
		}
		ev, journaled, err := decodeFrame(id, event, data)
		if err != nil {
			return err
		}
		if !journaled {
			if !yield(ev, nil) {
				return errStopped
			}
			return nil
		}
		if ev.Sequence <= *cursor {
			return nil
		}
		*cursor = ev.Sequence
		progressed = true
		if !yield(ev, nil) {
			return errStopped
		}
		if ev.EventType == api.KindSessionEnded || ev.EventType == api.KindSessionCreationFailed {
			return errStreamEnded
		}
		return nil
	})
	if errors.Is(err, bufio.ErrTooLong) {
		err = fmt.Errorf("%w: a line or an event's data of more than %d bytes: %w", ErrMalformedEvent, maxLine, err)
	}
	return true, progressed, err
}

// decodeFrame decodes one frame of an event stream: an event when the
// frame has an id (journaled is true), else a live frame, whose data is
// kept as it came. Data that is not JSON, or an event that does not
// decode, lacks its sequence or type (null; a payload alone, as an
// older contract sent on its streams), whose sequence is not the
// frame's id or whose type is not the frame's event name, and a live
// frame without a name, is ErrMalformedEvent: passed
// over, such frames would leave a follower waiting for events that
// never come.
func decodeFrame(id, event string, data []byte) (ev api.Event, journaled bool, err error) {
	// The frame's id and name are quoted in its error at most
	// maxFrameQuote bytes long: a line of the stream may hold 80 MiB.
	if id == "" {
		if event == "" {
			// Brain names each live frame with its kind: a frame without
			// one would be yielded as an event of no type.
			return api.Event{}, false, fmt.Errorf("%w: live frame without a name", ErrMalformedEvent)
		}
		if !json.Valid(data) {
			return api.Event{}, false, fmt.Errorf("%w: live frame %q: data is not JSON", ErrMalformedEvent, clip(event, maxFrameQuote))
		}
		return api.Event{EventType: event, Data: json.RawMessage(bytes.Clone(data))}, false, nil
	}
	quoted := strconv.Quote(clip(id, maxFrameQuote))
	if err := json.Unmarshal(data, &ev); err != nil {
		return api.Event{}, true, fmt.Errorf("%w: event %s: %w", ErrMalformedEvent, quoted, err)
	}
	switch {
	case ev.Sequence == 0:
		return api.Event{}, true, fmt.Errorf("%w: event %s: data without sequence (an event's payload alone?)", ErrMalformedEvent, quoted)
	case ev.EventType == "":
		return api.Event{}, true, fmt.Errorf("%w: event %s: data without event_type", ErrMalformedEvent, quoted)
	case id != strconv.FormatUint(ev.Sequence, 10):
		// Brain's id is its event's sequence: a frame whose id names
		// another was put together by something between Brain and the
		// client (or a broken server), and the cursor would take one
		// of the two on trust.
		return api.Event{}, true, fmt.Errorf("%w: event %s: data of sequence %d", ErrMalformedEvent, quoted, ev.Sequence)
	case event != ev.EventType:
		// Brain names a recorded frame with its event's type: a frame
		// whose name is another (or none) was put together by
		// something between Brain and the client, and which of the
		// two types the event has cannot be told.
		return api.Event{}, true, fmt.Errorf("%w: event %s: frame named %q carries an event of type %q", ErrMalformedEvent, quoted, clip(event, maxFrameQuote), clip(ev.EventType, maxFrameQuote))
	}
	return ev, true, nil
}

// maxFrameQuote bounds the id, name and type of a malformed frame quoted
// in its error.
const maxFrameQuote = 128
