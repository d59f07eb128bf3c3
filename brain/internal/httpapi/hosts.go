package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/hosts"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// Host route patterns.
const (
	PatternHosts        = "POST /v1/hosts"
	PatternHostCommands = "GET /v1/hosts/{host_id}/commands"
	PatternHostResults  = "POST /v1/hosts/{host_id}/results"
	PatternHostEvents   = "POST /v1/hosts/{host_id}/events"
	PatternHostModel    = "POST /v1/hosts/{host_id}/model"
	PatternHostCall     = "POST /v1/hosts/{host_id}/call"
	PatternHostSuspend  = "POST /v1/hosts/{host_id}/suspend"
)

// HeaderHostConnection names a host's commands connection in the stream's
// response (the connection a HostSuspend names).
const HeaderHostConnection = "Brain-Host-Connection"

// hostRoutes serves the host routes over reg: registration behind the
// server token, and every /v1/hosts/{host_id}/... route behind that
// host's own token (the server token is not accepted there). A displaced
// commands connection ends with one "event: displaced" frame, so that its
// host knows not to reconnect.
func (s *Server) hostRoutes(reg *hosts.Registry) {
	s.handle(PatternHosts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.readBody(w, r); err != nil {
			WriteError(w, err)
			return
		}
		if !s.admit() {
			WriteError(w, errDraining)
			return
		}
		defer s.done()
		out, err := reg.Register(r.Context())
		if err != nil {
			WriteError(w, hostError(err))
			return
		}
		WriteJSON(w, http.StatusOK, out)
	}))
	s.handleOpen(PatternHostCommands, s.hostAuth(reg, func(w http.ResponseWriter, r *http.Request, id string) {
		s.hostCommands(w, r, reg, id)
	}))
	s.handleOpen(PatternHostResults, s.hostAuthToken(reg, func(w http.ResponseWriter, r *http.Request, id, token string) {
		var in api.HostResult
		key, n, err := s.readKeyedHostJSON(w, r, token, &in)
		if err == nil {
			err = checkHostCall(in.SessionID, in.Sequence)
		}
		if err == nil && carriesOutcome(in.Update.Type) {
			err = s.checkOutcomeSize(in.Update.Type+" update", n)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		seq, err := reg.UpdateKeyed(r.Context(), id, key, in)
		answerSequence(w, seq, err)
	}))
	s.handleOpen(PatternHostEvents, s.hostAuthToken(reg, func(w http.ResponseWriter, r *http.Request, id, token string) {
		var in api.HostEvent
		key, _, err := s.readKeyedHostJSON(w, r, token, &in)
		if err == nil {
			err = checkHostCall(in.SessionID, in.Sequence)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		seq, err := reg.EmitKeyed(r.Context(), id, key, in)
		answerSequence(w, seq, err)
	}))
	s.handleOpen(PatternHostModel, s.hostAuthToken(reg, func(w http.ResponseWriter, r *http.Request, id, token string) {
		var in api.HostModelCall
		_, err := s.readHostJSON(w, r, token, &in)
		if err == nil {
			err = checkHostCall(in.SessionID, in.Sequence)
		}
		if err == nil && in.Request.Messages == nil {
			// A ModelRequest requires its messages (an empty list is one).
			err = invalidField("request.messages is required")
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		out, err := reg.Model(r.Context(), id, in)
		if err != nil {
			WriteError(w, hostError(err))
			return
		}
		WriteJSON(w, http.StatusOK, out)
	}))
	s.handleOpen(PatternHostCall, s.hostAuthToken(reg, func(w http.ResponseWriter, r *http.Request, id, token string) {
		var in api.HostServiceCall
		key, n, err := s.readKeyedHostJSON(w, r, token, &in)
		if err == nil {
			err = checkHostCall(in.SessionID, in.Sequence)
		}
		if err == nil && in.Call.Method == "" {
			err = invalidField("call.method is required")
		}
		if err == nil && carriesOutcome(in.Call.Method) {
			err = s.checkOutcomeSize(in.Call.Method+" call", n)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		out, err := reg.ServiceCallKeyed(r.Context(), id, key, in)
		if err != nil {
			WriteError(w, hostError(err))
			return
		}
		writeRaw(w, http.StatusOK, out)
	}))
	s.handleOpen(PatternHostSuspend, s.hostAuth(reg, func(w http.ResponseWriter, r *http.Request, id string) {
		var in api.HostSuspend
		_, err := s.readJSON(w, r, &in)
		if err == nil && in.Connection == "" {
			err = invalidField("connection is required: the Brain-Host-Connection header of the commands stream to close")
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		ok, err := reg.Suspend(id, in.Connection)
		if err != nil {
			WriteError(w, hostError(err))
			return
		}
		WriteJSON(w, http.StatusOK, api.HostSuspended{Suspended: ok})
	}))
}

// hostAuth checks the host id and its token.
func (s *Server) hostAuth(reg *hosts.Registry, h func(w http.ResponseWriter, r *http.Request, id string)) http.Handler {
	return s.hostAuthToken(reg, func(w http.ResponseWriter, r *http.Request, id, _ string) { h(w, r, id) })
}

// hostAuthToken is hostAuth for handlers that need the host's token.
func (s *Server) hostAuthToken(reg *hosts.Registry, h func(w http.ResponseWriter, r *http.Request, id, token string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("host_id")
		token, ok := bearer(r)
		if !ok || !hosts.ValidHostID(id) || reg.Authenticate(id, token) != nil {
			refuseUnread(w, r, errUnauthorized)
			return
		}
		h(w, r, id, token)
	})
}

// readHostJSON is readJSON for what a host sends: a result, an event, a
// model or service call is journaled, so the host's token is removed from
// its strings, even when the host writes it into what it sends. It
// answers the size of the body as sent.
func (s *Server) readHostJSON(w http.ResponseWriter, r *http.Request, token string, v any) (int64, error) {
	b, err := s.readJSON(w, r, v)
	if err != nil {
		return 0, err
	}
	if red := envbind.RedactJSON(b, token); !bytes.Equal(red, b) {
		reflect.ValueOf(v).Elem().SetZero()
		return int64(len(b)), decodeStrict(red, v)
	}
	return int64(len(b)), nil
}

// readKeyedHostJSON reads a host's request that may carry an
// Idempotency-Key: the key (empty without one), then its body into v,
// and answers the key and the body's size.
func (s *Server) readKeyedHostJSON(w http.ResponseWriter, r *http.Request, token string, v any) (string, int64, error) {
	key, err := optionalKey(r)
	if err != nil {
		return "", 0, err
	}
	n, err := s.readHostJSON(w, r, token, v)
	return key, n, err
}

// checkHostCall checks the fields that name the tool call a host's
// request is about: a session id and the sequence of its
// tool_call_started (at least 1). A request that breaks their schema is a
// 422, not a request of a call the host does not hold.
func checkHostCall(sessionID string, seq uint64) error {
	if !session.ValidSessionID(sessionID) {
		return invalidField(fmt.Sprintf("session_id %.80q is not a session id (ses_ and 20 to 32 letters and digits)", sessionID))
	}
	if seq == 0 {
		return invalidField("sequence must be at least 1: the sequence of the tool call's tool_call_started")
	}
	return nil
}

// optionalKey answers the request's Idempotency-Key, "" when it has
// none, or the 400 for an oversize or repeated one.
func optionalKey(r *http.Request) (string, error) {
	if _, ok := r.Header["Idempotency-Key"]; !ok {
		return "", nil
	}
	return idempotencyKey(r)
}

func answerSequence(w http.ResponseWriter, seq uint64, err error) {
	if err != nil {
		WriteError(w, hostError(err))
		return
	}
	WriteJSON(w, http.StatusOK, api.SequenceAnswer{Sequence: seq})
}

func hostError(err error) error {
	switch {
	case errors.Is(err, hosts.ErrLimit), errors.Is(err, hosts.ErrClosed):
		return newError(http.StatusServiceUnavailable, api.CodeOverloaded, cleanMessage(err.Error()))
	case errors.Is(err, hosts.ErrUnauthorized):
		return errUnauthorized
	case errors.Is(err, hosts.ErrKeyNotTaken):
		return badRequest(cleanMessage(err.Error()))
	case errors.Is(err, hosts.ErrKeyConflict):
		return newError(http.StatusConflict, api.CodeConflict, cleanMessage(err.Error()))
	}
	return err
}

// hostCommands streams a host's commands (event: command) until the host
// goes away, a newer connection displaces this one or the server stops.
// A comment every Options.Heartbeat, named in the Brain-Heartbeat-Ms
// header as on event streams, lets the host tell a connection dropped on
// the way and connect again.
func (s *Server) hostCommands(w http.ResponseWriter, r *http.Request, reg *hosts.Registry, id string) {
	// A drain serves its admitted turns with their callbacks, and a host's
	// commands stream is its callback: a registered host may connect
	// again until the drain closes the streams.
	if s.stop.Err() != nil {
		WriteError(w, errDraining)
		return
	}
	if err := acceptsStreamOnly(r); err != nil {
		WriteError(w, err)
		return
	}
	if r.Method == http.MethodHead {
		// A HEAD opens no connection: connecting would displace the
		// host's live one.
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set(heartbeatHeader, s.heartbeatMs())
		w.WriteHeader(http.StatusOK)
		return
	}
	conn, err := reg.Connect(id)
	if err != nil {
		WriteError(w, hostError(err))
		return
	}
	defer conn.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set(HeaderHostConnection, conn.ID)
	h.Set(heartbeatHeader, s.heartbeatMs())
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	for {
		select {
		case f := <-conn.Frames():
			b := make([]byte, 0, len(f.Data)+24)
			b = append(b, "event: command\ndata: "...)
			b = append(b, f.Data...)
			b = append(b, "\n\n"...)
			err := write(b)
			if err == nil {
				// Written to a connection that had already ended: the
				// host may not have read it.
				err = context.Cause(r.Context())
			}
			// A command whose write failed may have reached the host or
			// not: the registry records it so and ends the connection.
			f.Wrote(err)
			if err != nil {
				return
			}
		case <-beat.C:
			if write([]byte(": ping\n\n")) != nil {
				return
			}
		case <-conn.Done():
			if conn.Displaced() {
				_ = write([]byte("event: displaced\ndata: {}\n\n"))
			}
			return
		case <-r.Context().Done():
			return
		case <-s.stop.Done():
			return
		}
	}
}
