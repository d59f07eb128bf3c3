package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/hosts"
)

// routeMethods are the methods a route may serve; HEAD is served where GET
// is.
var routeMethods = []string{http.MethodDelete, http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch}

// allowed answers the methods some route other than the catch-all serves
// at r's path, sorted (HEAD with GET), or nil when no route serves it.
func (s *Server) allowed(r *http.Request) []string {
	var out []string
	for _, m := range routeMethods {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "" && pattern != patternNotRouted && (pattern != PatternBinding || bindingPath(r)) {
			out = append(out, m)
			if m == http.MethodGet {
				out = append(out, http.MethodHead)
			}
		}
	}
	slices.Sort(out)
	return out
}

// bindingPath reports whether r's path, which PatternBinding matches, is
// one POST serves there (an environment call or a report), not merely of
// its shape.
func bindingPath(r *http.Request) bool {
	segs := strings.Split(r.URL.EscapedPath(), "/") // "", v1, sessions, {id}, environments, {env}, {seg}, {last}
	if len(segs) != 8 {
		return false
	}
	var vals [3]string
	for i, raw := range segs[5:] {
		v, err := url.PathUnescape(raw)
		if err != nil {
			return false
		}
		vals[i] = v
	}
	return bindingServed(vals[0], vals[1], vals[2])
}

// notRoutedAuth answers a request no route took. A method a served path
// does not serve is answered (405 with Allow; OPTIONS 204 with Allow)
// before any token is checked, to every caller: the methods of a path
// pattern are the route table, public in the OpenAPI document, and not
// whether anything exists at the path; so a caller holding an invocation,
// reporter or host token, or none on an open route, is told so rather
// than that the server token is missing. Its body is not read. A path no
// route serves is authenticated as the server token does, except that on
// a registered host's own paths (/v1/hosts/{host_id}/...) that host's
// token is taken too, since it is the only one the host has.
func (s *Server) notRoutedAuth(h http.Handler) http.Handler {
	server := s.authenticate(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow := s.allowed(r); len(allow) > 0 {
			if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
				closeUnread(w, r)
			}
			wrongMethod(w, r, allow)
			return
		}
		if s.ownHostPath(r) {
			h.ServeHTTP(w, r)
			return
		}
		server.ServeHTTP(w, r)
	})
}

// ownHostPath reports whether r is under a host's path, /v1/hosts/{host_id}/,
// with that host's token.
func (s *Server) ownHostPath(r *http.Request) bool {
	if s.opts.Hosts == nil {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/hosts/")
	if !ok {
		return false
	}
	id, _, under := strings.Cut(rest, "/")
	token, ok := bearer(r)
	return under && ok && hosts.ValidHostID(id) && s.opts.Hosts.Authenticate(id, token) == nil
}

// notRouted answers a request to a path no route serves: 404.
func (s *Server) notRouted(w http.ResponseWriter, _ *http.Request) {
	WriteError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such route"))
}

// wrongMethod answers a method a served path does not serve, allow being
// the methods it serves: 204 with Allow for OPTIONS, else 405 with Allow.
func wrongMethod(w http.ResponseWriter, r *http.Request, allow []string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	WriteError(w, newError(http.StatusMethodNotAllowed, api.CodeInvalidRequest,
		fmt.Sprintf("method %s is not allowed on this route; it allows %s", r.Method, strings.Join(allow, ", "))))
}
