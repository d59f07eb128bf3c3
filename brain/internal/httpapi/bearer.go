package httpapi

import (
	"net/http"
	"strings"
)

// bearer answers the token of the request's "Authorization: Bearer
// <token>" header. The scheme is matched without regard to case, as
// HTTP authentication schemes are (RFC 7235, section 2.1); the token is
// taken as sent, to be compared exactly by the caller.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return tok, tok != ""
}
