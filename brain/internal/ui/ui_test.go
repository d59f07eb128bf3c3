package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/ui"
)

func serve(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /ui/", ui.Handler())
	mux.Handle("POST /ui/", ui.Handler())
	mux.Handle("GET /ui", ui.Redirect())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	r, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r, string(b)
}

// TestFiles checks that the page and its assets are served with their
// types and a same-origin-only content security policy.
func TestFiles(t *testing.T) {
	srv := serve(t)
	for _, c := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js"`},
		{"/ui/app.js", "javascript", "sessionStorage"},
		{"/ui/style.css", "text/css", ".entry"},
	} {
		r, body := get(t, srv.Client(), srv.URL+c.path)
		if r.StatusCode != 200 || !strings.Contains(r.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s = %d %q, body has %q: %v", c.path, r.StatusCode, r.Header.Get("Content-Type"), c.contains, strings.Contains(body, c.contains))
		}
		csp := r.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", c.path, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
	}
}

// TestNoInlineScript keeps the page working under its own policy: every
// script is a same-origin file and no handler is inline.
func TestNoInlineScript(t *testing.T) {
	srv := serve(t)
	_, body := get(t, srv.Client(), srv.URL+"/ui/")
	low := strings.ToLower(body)
	if n := strings.Count(low, "<script"); n != strings.Count(low, "<script src=") {
		t.Errorf("index.html has an inline script")
	}
	for _, attr := range []string{" onclick=", " onload=", " onsubmit=", "javascript:"} {
		if strings.Contains(low, attr) {
			t.Errorf("index.html has %q, which the policy blocks", attr)
		}
	}
}

// TestRoutes checks the redirect, unknown files and methods.
func TestRoutes(t *testing.T) {
	srv := serve(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, _ := get(t, noRedirect, srv.URL+"/ui")
	if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui = %d Location %q, want 301 to /ui/", r.StatusCode, r.Header.Get("Location"))
	}
	if r, _ := get(t, srv.Client(), srv.URL+"/ui/nope.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js = %d, want 404", r.StatusCode)
	}
	if r, _ := get(t, srv.Client(), srv.URL+"/ui/../../etc/passwd"); r.StatusCode == 200 {
		t.Errorf("GET /ui/../../etc/passwd = 200")
	}
	resp, err := srv.Client().Post(srv.URL+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/ = %d, want 405", resp.StatusCode)
	}
}
