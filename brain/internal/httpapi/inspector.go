package httpapi

import (
	"io/fs"
	"net/http"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/ui"
)

// inspectorCSP confines the inspector page to its own origin: no inline
// script, no framing, no other hosts.
const inspectorCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// inspector serves the session inspector's files under ui.Prefix. It needs
// no token: the files hold no data, and the page sends the operator's
// token with each API request it makes. What the file server refuses (a
// file it does not have, a range it cannot serve) is answered, with the
// same status, as an ApiError like every other refusal.
func inspector(files fs.FS) http.Handler {
	fileServer := http.StripPrefix(ui.Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", inspectorCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(&fileErrors{ResponseWriter: w}, r)
	})
}

// fileErrors turns the plain-text error pages of http.FileServer into
// ApiErrors: the status it writes is kept, the text it writes after it
// dropped.
type fileErrors struct {
	http.ResponseWriter
	failed bool
}

func (w *fileErrors) WriteHeader(code int) {
	if code < http.StatusBadRequest || w.failed {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.failed = true
	h := w.ResponseWriter.Header()
	h.Del("Content-Encoding")
	h.Del("Content-Range")
	h.Del("Last-Modified")
	h.Del("Etag")
	var e *Error
	switch {
	case code == http.StatusNotFound:
		e = newError(code, api.CodeNotFound, "no such file")
	case code >= http.StatusInternalServerError:
		e = newError(code, api.CodeInternal, http.StatusText(code))
	default:
		e = newError(code, api.CodeInvalidRequest, http.StatusText(code))
	}
	WriteError(w.ResponseWriter, e)
}

func (w *fileErrors) Write(b []byte) (int, error) {
	if w.failed {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *fileErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }
