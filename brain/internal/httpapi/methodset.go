package httpapi

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// patternNotRouted is the catch-all pattern of the requests no route
// takes (see notRouted).
const patternNotRouted = "/"

// methodOther stands for a method HTTP does not define, in spans and
// logs.
const methodOther = "_OTHER"

// maxMethodOriginal bounds the method a client sent as a span keeps it
// when HTTP does not define it (http.request.method_original).
const maxMethodOriginal = 64

// knownMethod answers m when it is a method HTTP defines (RFC 9110 and
// PATCH, compared case-sensitively as methods are), else methodOther and
// false: the closed set of methods spans and logs name.
func knownMethod(m string) (string, bool) {
	switch m {
	case http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace:
		return m, true
	}
	return methodOther, false
}

// methodOriginal answers the method m a client sent as a span records it:
// cut to maxMethodOriginal bytes on a rune boundary, valid UTF-8.
func methodOriginal(m string) string {
	if n := maxMethodOriginal; len(m) > n {
		for n > 0 && !utf8.RuneStart(m[n]) {
			n--
		}
		m = m[:n]
	}
	return strings.ToValidUTF8(m, "\uFFFD")
}
