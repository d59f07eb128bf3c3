package httpapi

import (
	"net/http"
	"testing"
)

// TestHostRoutesAnswerWrongMethodToTheHost checks that a host asking one
// of its own routes with a method the route does not serve, with its own
// token, is told so (405 with Allow, or 204 with Allow for OPTIONS), not
// that its token is refused; a wrong host token is still refused.
func TestHostRoutesAnswerWrongMethodToTheHost(t *testing.T) {
	f := newHostFixture(t)
	base := "/v1/hosts/" + f.hostID
	cases := []struct {
		method, path, allow string
		want                int
	}{
		{"GET", base + "/results", "POST", http.StatusMethodNotAllowed},
		{"PUT", base + "/events", "POST", http.StatusMethodNotAllowed},
		{"DELETE", base + "/suspend", "POST", http.StatusMethodNotAllowed},
		{"POST", base + "/commands", "GET, HEAD", http.StatusMethodNotAllowed},
		{"OPTIONS", base + "/call", "POST", http.StatusNoContent},
	}
	for _, c := range cases {
		st, h, b := f.do(c.method, c.path, "", "Authorization", "Bearer "+f.token)
		if st != c.want || h.Get("Allow") != c.allow {
			t.Errorf("%s %s with the host's token = %d Allow %q %s, want %d Allow %q", c.method, c.path, st, h.Get("Allow"), b, c.want, c.allow)
		}
		if st, _, b := f.do(c.method, c.path, "", "Authorization", "Bearer "+f.token+"x"); st != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token = %d %s, want 401", c.method, c.path, st, b)
		}
	}
	// Another path than the host's own is not opened by its token.
	if st, _, b := f.do("PUT", "/v1/sessions", "", "Authorization", "Bearer "+f.token); st != http.StatusUnauthorized {
		t.Errorf("PUT /v1/sessions with a host token = %d %s, want 401", st, b)
	}
}
