package catalog

import (
	"encoding/json"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
)

// Handler answers GET /v1/models from c; mount it behind the server token.
func Handler(c *Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list := c.List()
		if q := r.URL.Query(); q.Has("provider") {
			id := q.Get("provider")
			if len(q["provider"]) != 1 || !namePattern.MatchString(id) {
				writeError(w, http.StatusBadRequest, api.CodeInvalidRequest, "provider must be one provider id")
				return
			}
			p, ok := c.Provider(id)
			if !ok {
				writeError(w, http.StatusNotFound, api.CodeNotFound, "no such provider")
				return
			}
			list.Providers = []Provider{p}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ApiError{Code: code, Message: msg, Retryable: api.DefaultRetryable(code)})
}
