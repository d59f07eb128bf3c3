package httpapi

import (
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// ScopeAdmitTool is the idempotency scope of Tool admission.
const ScopeAdmitTool = "tools.admit"

// toolRoutes mounts the Tool admission routes behind the server token,
// with the rules of the agentloop routes:
//
//	POST /v1/tools       application/octet-stream module bytes,
//	                     Idempotency-Key; 200 ToolAdmission
//	GET  /v1/tools/{id}  200 ToolAdmission, 404 when unknown
func (s *Server) toolRoutes() {
	s.handle("POST /v1/tools", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.admitModule(w, r, ScopeAdmitTool, s.opts.Agentloops.AdmitTool)
	}))
	s.handle("GET /v1/tools/{id}", http.HandlerFunc(s.getTool))
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !loophost.ValidID(id) {
		WriteError(w, badRequest("a tool id is 64 lowercase hex digits"))
		return
	}
	a, ok, err := s.opts.Agentloops.FindTool(r.Context(), id)
	if err != nil {
		WriteError(w, err)
		return
	}
	if !ok {
		WriteError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such tool"))
		return
	}
	WriteJSON(w, http.StatusOK, a)
}
