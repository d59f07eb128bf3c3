package httpapi

import (
	"context"
	"errors"
	"mime"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// ScopeAdmit is the idempotency scope of agentloop admission.
const ScopeAdmit = "agentloops.admit"

// agentloopRoutes mounts the admission routes behind the server token:
//
//	POST /v1/agentloops       application/octet-stream module bytes,
//	                          Idempotency-Key; 200 AgentloopAdmission
//	GET  /v1/agentloops/{id}  200 AgentloopAdmission, 404 when unknown
//
// A missing, oversize or repeated Idempotency-Key answers 400 and another
// Content-Type than application/octet-stream 415, before the body is
// read; an empty body answers 400 and one over the module bound or
// Options.MaxRequestBytes 413, before the key is claimed.
func (s *Server) agentloopRoutes() {
	s.handle("POST /v1/agentloops", http.HandlerFunc(s.admitAgentloop))
	s.handle("GET /v1/agentloops/{id}", http.HandlerFunc(s.getAgentloop))
}

func (s *Server) admitAgentloop(w http.ResponseWriter, r *http.Request) {
	s.admitModule(w, r, ScopeAdmit, s.opts.Agentloops.Admit)
}

// admitModule reads a module body and admits it under the idempotency
// scope.
func (s *Server) admitModule(w http.ResponseWriter, r *http.Request, scope string, admit func(context.Context, []byte) (loophost.Admission, error)) {
	h := s.opts.Agentloops
	// A request refused for its headers is answered before the module it
	// carries is read.
	if _, err := idempotencyKey(r); err != nil {
		WriteError(w, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/octet-stream" {
			WriteError(w, newError(http.StatusUnsupportedMediaType, api.CodeInvalidRequest, "the body must be application/octet-stream module bytes"))
			return
		}
	}
	// A module is a request body: the smaller of the module bound and
	// the request bound applies.
	body, err := s.readBodyWithin(w, r, min(h.MaxModuleBytes(), s.opts.MaxRequestBytes), "the module")
	switch {
	case err != nil:
		WriteError(w, err)
		return
	case len(body) == 0:
		WriteError(w, badRequest("the body must be non-empty module bytes"))
		return
	}
	s.Idempotent(w, r, scope, body, func(ctx context.Context) (int, any, error) {
		a, err := admit(ctx, body)
		if errors.Is(err, loophost.ErrClosed) {
			// The loop host closed (the server shuts down) before the
			// module was compiled: nothing was admitted.
			return 0, nil, refused(err)
		}
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, a, nil
	})
}

func (s *Server) getAgentloop(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !loophost.ValidID(id) {
		WriteError(w, badRequest("an agentloop id is 64 lowercase hex digits"))
		return
	}
	a, ok, err := s.opts.Agentloops.Find(r.Context(), id)
	if err != nil {
		WriteError(w, err)
		return
	}
	if !ok {
		WriteError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such agentloop"))
		return
	}
	WriteJSON(w, http.StatusOK, a)
}
