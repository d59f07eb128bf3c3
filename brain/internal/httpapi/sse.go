package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// streamWriteTimeout bounds one frame write to a stream subscriber; a
// reader that stalls longer loses its stream.
const streamWriteTimeout = 30 * time.Second

// stopGrace is how long a stream waits for a further frame, and for a
// write, once the server stops.
const stopGrace = 250 * time.Millisecond

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
	defer s.streams.Done()
	ctx := r.Context()

	sub, err := s.opts.Engine.Subscribe(ctx, id, after, s.opts.MaxLiveBacklog)
	if err != nil {
		WriteError(w, err)
		return
	}
	defer sub.Close()
	// A stream past the end of a finished session would never get a frame.
	sum, err := s.opts.Engine.Summary(ctx, id)
	if err != nil {
		WriteError(w, err)
		return
	}
	finished := (sum.Status == api.StatusEnded || sum.Status == api.StatusFailed) && after >= sum.LastSequence

	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil || finished {
		return
	}
	var buf []byte
	for {
		// Once the server stops, deliver what is already committed and end
		// the stream when nothing more arrives promptly.
		stopping := s.stop.Err() != nil
		wait := s.opts.Heartbeat
		if stopping {
			wait = stopGrace
		}
		nctx, ncancel := context.WithTimeout(ctx, wait)
		unwatch := func() bool { return false }
		if !stopping {
			unwatch = context.AfterFunc(s.stop, ncancel)
		}
		f, err := sub.Next(nctx)
		unwatch()
		ncancel()
		buf = buf[:0]
		last := false
		switch {
		case err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
			if stopping {
				return
			}
			if s.stop.Err() != nil {
				continue
			}
			buf = append(buf, ": keep-alive\n\n"...)
		case err != nil:
			if errors.Is(err, journal.ErrLagged) {
				s.log.Debug("stream subscriber lagged", "session", id)
			}
			return
		case f.Event != nil:
			buf = appendEvent(buf, f.Event)
			last = f.Event.EventType == api.KindSessionEnded || f.Event.EventType == api.KindSessionCreationFailed
		case f.Live != nil:
			buf = appendLive(buf, f.Live.Type, f.Live.Data)
		default:
			continue
		}
		timeout := streamWriteTimeout
		if stopping {
			timeout = stopGrace
		}
		_ = rc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := w.Write(buf); err != nil {
			return
		}
		if rc.Flush() != nil || last {
			return
		}
	}
}

// appendEvent appends the frame of a recorded event.
func appendEvent(buf []byte, ev *api.Event) []byte {
	data, err := json.Marshal(ev)
	if err != nil {
		return buf
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendUint(buf, ev.Sequence, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.EventType...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

// appendLive appends the frame of a live-only frame: no id line.
func appendLive(buf []byte, typ string, data json.RawMessage) []byte {
	compact, err := json.Marshal(data)
	if err != nil {
		return buf
	}
	buf = append(buf, "event: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, compact...)
	return append(buf, "\n\n"...)
}
