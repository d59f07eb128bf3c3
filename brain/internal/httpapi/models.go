package httpapi

import (
	"net/http"
	"regexp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/catalog"
)

var providerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// listModels answers GET /v1/models[?provider=]: the catalogue, or one
// provider of it (400 for a malformed query or id, 404 for an unknown one).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	q, err := query(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	list := s.opts.Models.List()
	if q.Has("provider") {
		id := q.Get("provider")
		if len(q["provider"]) != 1 || !providerIDPattern.MatchString(id) {
			WriteError(w, newError(http.StatusBadRequest, api.CodeInvalidRequest, "provider must be one provider id"))
			return
		}
		p, ok := s.opts.Models.Provider(id)
		if !ok {
			WriteError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such provider"))
			return
		}
		list.Providers = []catalog.Provider{p}
	}
	WriteJSON(w, http.StatusOK, list)
}
