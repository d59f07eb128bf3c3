package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
)

// Operation scopes of the idempotent session routes.
const (
	ScopeCreate      = "create_session"
	ScopeDelete      = "delete_session"
	ScopeSendSync    = "send_message"
	ScopeSendAsync   = "send_message.async"
	ScopeCancel      = "cancel_session"
	ScopeEnd         = "end_session"
	preferAsyncValue = "respond-async"
)

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if _, err := idempotencyKey(r); err != nil {
		WriteError(w, err)
		return
	}
	var req api.CreateSessionRequest
	body, err := s.readJSON(w, r, &req)
	if err == nil {
		err = validateCreate(&req)
	}
	if err == nil {
		err = presentCredentials(body)
	}
	if err != nil {
		WriteError(w, err)
		return
	}
	s.Idempotent(w, r, ScopeCreate, body, func(ctx context.Context) (int, any, error) {
		if s.opts.PrepareCreate != nil {
			if err := s.opts.PrepareCreate(ctx, &req); err != nil {
				return 0, nil, err
			}
		}
		sum, err := s.opts.Engine.Create(ctx, "", req)
		return http.StatusOK, sum, err
	})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.opts.Engine.List(r.Context())
	if err != nil {
		WriteError(w, err)
		return
	}
	if list == nil {
		list = []api.SessionSummary{}
	}
	WriteJSON(w, http.StatusOK, api.SessionList{Sessions: list})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	sum, err := s.opts.Engine.Summary(r.Context(), id)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, sum)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	s.noBodyOp(w, r, ScopeDelete, func(ctx context.Context, id string) (int, any, error) {
		return http.StatusNoContent, nil, s.opts.Engine.Delete(ctx, id)
	})
}

// gated runs f inside session id's gate (see enterGate); wantHint asks to
// become the session's hinted submission.
func (s *Server) gated(w http.ResponseWriter, r *http.Request, id string, wantHint bool, f func(hinted bool)) {
	g, hinted, err := s.enterGate(r.Context(), id, wantHint)
	if err != nil {
		WriteError(w, err)
		return
	}
	defer s.leaveGate(id, g, hinted)
	f(hinted)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	s.noBodyOp(w, r, ScopeCancel, func(ctx context.Context, id string) (int, any, error) {
		return http.StatusNoContent, nil, s.opts.Engine.Interrupt(ctx, id)
	})
}

func (s *Server) end(w http.ResponseWriter, r *http.Request) {
	s.noBodyOp(w, r, ScopeEnd, func(ctx context.Context, id string) (int, any, error) {
		sum, err := s.opts.Engine.End(ctx, id)
		return http.StatusOK, sum, err
	})
}

// noBodyOp runs an idempotent session operation that takes no body; a
// body, if sent, is read within the limit and ignored.
func (s *Server) noBodyOp(w http.ResponseWriter, r *http.Request, scope string, op func(ctx context.Context, id string) (int, any, error)) {
	id, err := sessionID(r)
	if err == nil {
		_, err = idempotencyKey(r)
	}
	if err == nil {
		_, err = s.readBody(w, r)
	}
	if err != nil {
		WriteError(w, err)
		return
	}
	run := func(bool) {
		s.Idempotent(w, r, scope, nil, func(ctx context.Context) (int, any, error) { return op(ctx, id) })
	}
	if scope == ScopeDelete {
		s.gated(w, r, id, false, run)
		return
	}
	run(false)
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	async := false
	if prefs, ok := r.Header["Prefer"]; ok {
		if len(prefs) != 1 || !strings.EqualFold(strings.TrimSpace(prefs[0]), preferAsyncValue) {
			WriteError(w, badRequest("unsupported Prefer header"))
			return
		}
		async = true
	}
	if _, err := idempotencyKey(r); err != nil {
		WriteError(w, err)
		return
	}
	var req api.MessageRequest
	body, err := s.readJSON(w, r, &req)
	if err == nil {
		err = validateInput(req.Input)
	}
	if err != nil {
		WriteError(w, err)
		return
	}
	if async {
		s.gated(w, r, id, true, func(hinted bool) {
			var h *claimHint
			if _, rides := s.opts.Requests.(idem.Rider); hinted && !rides {
				if next, err := s.nextSequence(r.Context(), id); err == nil && next > 0 {
					h = &claimHint{hint: submitHint(id, next), derivable: func(status int, v any) bool {
						seq, ok := v.(uint64)
						return status == http.StatusAccepted && ok && seq >= next
					}}
				}
			}
			s.idempotent(w, r, ScopeSendAsync, body, h, func(ctx context.Context) (int, any, error) {
				seq, err := s.opts.Engine.Submit(ctx, id, req.Input)
				return http.StatusAccepted, seq, err
			})
		})
		return
	}
	s.gated(w, r, id, false, func(bool) {
		s.Idempotent(w, r, ScopeSendSync, body, func(ctx context.Context) (int, any, error) {
			sum, err := s.opts.Engine.Send(ctx, id, req.Input)
			return http.StatusOK, sum, err
		})
	})
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	after, err := cursor(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	sse, err := wantsStream(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	if sse {
		if r.Method == http.MethodHead {
			s.streamHead(w, r, id)
			return
		}
		s.stream(w, r, id, after)
		return
	}
	page, err := s.opts.Engine.Events(r.Context(), id, after)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, page)
}
