package httpapi

import (
	_ "embed"
	"net/http"
	"slices"
)

// OpenAPI is the OpenAPI 3.1 document of every route the server serves,
// answered at GET /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeRaw(w, http.StatusOK, OpenAPI)
}

// Routes answers the mux patterns the server serves, in the order they
// were mounted.
func (s *Server) Routes() []string { return slices.Clone(s.patterns) }
