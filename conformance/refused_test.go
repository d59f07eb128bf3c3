package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// servesInvalidThenRefuses serves what it can read of a command it should
// refuse (its first JSON value, unknown fields dropped, or one posted to
// any path), and then refuses it: the refusal comes after the effect.
func servesInvalidThenRefuses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, strictErr := envapi.DecodeCommand(body)
		onRoute := r.URL.Path == "/v1/operations"
		if strictErr == nil && onRoute {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		var doc map[string]any
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&doc); err == nil {
			if op, ok := doc["operation"].(map[string]any); ok {
				for k := range op {
					if strings.HasPrefix(k, "conformance_") {
						delete(op, k)
					}
				}
			}
			loose, _ := json.Marshal(doc)
			if _, err := envapi.DecodeCommand(loose); err == nil {
				req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "/v1/operations", bytes.NewReader(loose))
				req.Header = r.Header.Clone()
				next.ServeHTTP(&buffered{header: http.Header{}}, req)
			}
		}
		if !onRoute {
			http.Error(w, `{"error":"no route"}`, http.StatusNotFound)
			return
		}
		http.Error(w, `{"error":"invalid command"}`, http.StatusBadRequest)
	})
}
