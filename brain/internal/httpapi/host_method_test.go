package httpapi

import (
	"net/http"
	"testing"
)

// TestHostRoutesAnswerWrongMethodToTheHost checks that a host asking one
// of its own routes with a method the route does not serve, with its own
// token, is told so (405 with Allow, or 204 with Allow for OPTIONS), not
// that its token is refused; and that a path of the host's no route
// serves is answered 404 to the host's token, 401 to a wrong one.
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
	}
	if st, _, b := f.do("GET", base+"/nothing", "", "Authorization", "Bearer "+f.token); st != http.StatusNotFound {
		t.Errorf("GET of no route under the host's path with its token = %d %s, want 404", st, b)
	}
	if st, _, b := f.do("GET", base+"/nothing", "", "Authorization", "Bearer "+f.token+"x"); st != http.StatusUnauthorized {
		t.Errorf("GET of no route under the host's path with a wrong token = %d %s, want 401", st, b)
	}
	// Another path than the host's own is not opened by its token.
	if st, _, b := f.do("GET", "/v1/nothing", "", "Authorization", "Bearer "+f.token); st != http.StatusUnauthorized {
		t.Errorf("GET /v1/nothing with a host token = %d %s, want 401", st, b)
	}
}
