package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWrongMethodAnsweredToEveryCaller checks that a method a served path
// does not serve is answered 405 with Allow (OPTIONS 204 with Allow)
// whatever token the caller holds: an invocation or reporter token, a
// host's, none on an open route, or none at all. Only the route table,
// which the OpenAPI document publishes, is told: a path no route serves
// still needs the server token to be answered 404.
func TestWrongMethodAnsweredToEveryCaller(t *testing.T) {
	f := newHostFixtureWith(t, Options{Bindings: newBinder(t)}, nil)
	sp := "/v1/sessions/" + f.create("c").SessionID
	cases := []struct {
		method, path, auth, allow string
		want                      int
	}{
		{"GET", sp + "/executions/3/call", "Bearer an-invocation-token", "POST", 405},
		{"PUT", sp + "/environments/box/1/events", "Bearer a-reporter-token", "POST", 405},
		{"OPTIONS", sp + "/executions/3/call", "Bearer an-invocation-token", "POST", 204},
		{"POST", "/health/live", "", "GET, HEAD", 405},
		{"DELETE", "/health/ready", "", "GET, HEAD", 405},
		{"OPTIONS", "/health/live", "", "GET, HEAD", 204},
		{"POST", "/v1/openapi.json", "", "GET, HEAD", 405},
		{"PUT", "/v1/sessions", "", "GET, HEAD, POST", 405},
		{"PATCH", sp, "Bearer wrong", "DELETE, GET, HEAD", 405},
		{"GET", "/v1/hosts/" + f.hostID + "/results", "Bearer wrong", "POST", 405},
	}
	for _, c := range cases {
		st, h, b := f.do(c.method, c.path, "", "Authorization", c.auth)
		if st != c.want || h.Get("Allow") != c.allow {
			t.Errorf("%s %s (Authorization %q) = %d Allow %q %s, want %d Allow %q", c.method, c.path, c.auth, st, h.Get("Allow"), b, c.want, c.allow)
		}
	}
	// A path no route serves tells nothing without the server token.
	if st, h, b := f.do("PUT", "/v1/nothing", "", "Authorization", ""); st != http.StatusUnauthorized || h.Get("Allow") != "" {
		t.Errorf("PUT on no route without the token = %d Allow %q %s, want 401", st, h.Get("Allow"), b)
	}
	if st, _, b := f.do("PUT", "/v1/nothing", ""); st != http.StatusNotFound {
		t.Errorf("PUT on no route with the token = %d %s, want 404", st, b)
	}
}

// TestWrongMethodDoesNotWaitForTheBody checks that a wrong method answered
// before any token is checked does not wait for the body the request
// announced, and closes its connection: a caller without a token cannot
// hold a connection open by sending its body slowly or never.
func TestWrongMethodDoesNotWaitForTheBody(t *testing.T) {
	f := newFixture(t, Options{})
	c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// Ten bytes announced, one sent.
	_, _ = c.Write([]byte("PUT /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("PUT with a stalled body: %v, %v; want 405 at once", resp, err)
	}
	for {
		if _, err := br.ReadByte(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("connection not closed after the 405")
			}
			break
		}
	}
}
