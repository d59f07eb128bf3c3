package httpapi

import (
	"io/fs"
	"net/http"

	"github.com/brain-in-go/brain/brain/internal/ui"
)

// inspectorCSP confines the inspector page to its own origin: no inline
// script, no framing, no other hosts.
const inspectorCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// inspector serves the session inspector's files under ui.Prefix. It needs
// no token: the files hold no data, and the page sends the operator's
// token with each API request it makes.
func inspector(files fs.FS) http.Handler {
	fileServer := http.StripPrefix(ui.Prefix, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", inspectorCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	})
}
