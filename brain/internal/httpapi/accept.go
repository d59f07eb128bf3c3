package httpapi

import (
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
)

// Media types a route may negotiate.
const (
	mediaJSON   = "application/json"
	mediaStream = "text/event-stream"
)

// errAccept is the 400 for an Accept header that is not a list of media
// ranges with valid weights.
var errAccept = badRequest("the Accept header is malformed: it must list media ranges, each with at most one weight q between 0 and 1 of at most three decimals")

// errNotAcceptable is the 406 for a request whose Accept header refuses
// every representation of its route.
func errNotAcceptable(offered string) error {
	return newError(http.StatusNotAcceptable, api.CodeInvalidRequest, "the Accept header refuses every representation of this route; it offers "+offered)
}

// acceptance is the weight an Accept header gives a media type (RFC 9110,
// section 12.5.1): the weight of the most specific media range that
// matches it, 0..1000 in thousandths, and how specific that range is (0:
// none matched, 1: */*, 2: type/*, 3: the type itself).
type acceptance struct {
	q, precision int
}

// listed reports whether a media range matched.
func (a acceptance) listed() bool { return a.precision > 0 }

// acceptable reports whether a media range matched with a weight above 0.
func (a acceptance) acceptable() bool { return a.listed() && a.q > 0 }

// accepts answers the acceptance of each of types by r's Accept headers,
// or errAccept when they are malformed. Media type parameters other than
// the weight do not narrow a match; of two ranges equally specific the
// higher weight counts.
func accepts(r *http.Request, types ...string) ([]acceptance, error) {
	out := make([]acceptance, len(types))
	for _, v := range r.Header.Values("Accept") {
		for _, elem := range strings.Split(v, ",") {
			elem = strings.TrimSpace(elem)
			if elem == "" {
				continue // empty list elements are allowed (RFC 9110, section 5.6.1)
			}
			typ, sub, q, err := mediaRange(elem)
			if err != nil {
				return nil, err
			}
			for i, t := range types {
				tt, ts, _ := strings.Cut(t, "/")
				p := 0
				switch {
				case typ == "*" && sub == "*":
					p = 1
				case strings.EqualFold(typ, tt) && sub == "*":
					p = 2
				case strings.EqualFold(typ, tt) && strings.EqualFold(sub, ts):
					p = 3
				}
				if p > out[i].precision || (p == out[i].precision && p > 0 && q > out[i].q) {
					out[i] = acceptance{q: q, precision: p}
				}
			}
		}
	}
	return out, nil
}

// mediaRange parses one element of an Accept header: type/subtype, then
// parameters, a weight q among them (1000 when absent).
func mediaRange(elem string) (typ, sub string, q int, err error) {
	params := strings.Split(elem, ";")
	typ, sub, ok := strings.Cut(strings.TrimSpace(params[0]), "/")
	if !ok || !isToken(typ) || !isToken(sub) || (typ == "*" && sub != "*") {
		return "", "", 0, errAccept
	}
	q, weighted := 1000, false
	for _, p := range params[1:] {
		name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !isToken(strings.TrimSpace(name)) {
			return "", "", 0, errAccept
		}
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		w, ok := qvalue(strings.TrimSpace(val))
		if !ok || weighted {
			return "", "", 0, errAccept
		}
		q, weighted = w, true
	}
	return typ, sub, q, nil
}

// qvalue parses a weight (RFC 9110, section 12.4.2): 0 or 1 with at most
// three decimals, not above 1; it answers thousandths.
func qvalue(s string) (int, bool) {
	if s == "" || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	whole, frac, dot := strings.Cut(s, ".")
	if len(whole) != 1 || (dot && len(frac) == 0) {
		return 0, false
	}
	n := int(whole[0]-'0') * 1000
	scale := 100
	for _, c := range []byte(frac) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n += int(c-'0') * scale
		scale /= 10
	}
	if n > 1000 {
		return 0, false
	}
	return n, true
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c >= 0x80 || c <= ' ' || c == 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// wantsStream answers whether a route that answers both an event stream
// and a JSON document answers r with the stream: when its Accept header
// names text/event-stream itself with a weight above 0 (a wildcard does
// not ask for a stream) and does not prefer JSON to it. Otherwise JSON is
// answered, unless the header refuses JSON too (a weight of 0 on the
// most specific range matching it): then the 406. As everywhere in the
// API, a header that merely does not list JSON is not held against it.
func wantsStream(r *http.Request) (bool, error) {
	if _, ok := r.Header["Accept"]; !ok {
		return false, nil
	}
	a, err := accepts(r, mediaStream, mediaJSON)
	if err != nil {
		return false, err
	}
	stream, json := a[0], a[1]
	switch {
	case stream.precision == 3 && stream.q > 0 && (!json.listed() || json.q <= stream.q):
		return true, nil
	case !json.listed() || json.q > 0:
		return false, nil
	}
	return false, errNotAcceptable(mediaJSON + " and " + mediaStream)
}

// acceptsStreamOnly answers the 406 for a request to a route that answers
// only an event stream whose Accept header refuses one (a weight of 0 on
// the most specific range matching text/event-stream), else nil.
func acceptsStreamOnly(r *http.Request) error {
	if _, ok := r.Header["Accept"]; !ok {
		return nil
	}
	a, err := accepts(r, mediaStream)
	if err != nil {
		return err
	}
	if a[0].listed() && !a[0].acceptable() {
		return errNotAcceptable(mediaStream)
	}
	return nil
}
