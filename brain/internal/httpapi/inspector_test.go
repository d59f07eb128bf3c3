package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/catalog"
)

func getRaw(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	r, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r, string(b)
}

// TestInspectorFiles checks that the page and its assets are served
// without the token, with their types and a same-origin-only policy.
func TestInspectorFiles(t *testing.T) {
	f := newFixture(t, Options{})
	for _, c := range []struct{ path, ctype, contains string }{
		{"/ui/", "text/html", `<script src="app.js"`},
		{"/ui/app.js", "javascript", "sessionStorage"},
		{"/ui/style.css", "text/css", ".entry"},
	} {
		r, body := getRaw(t, http.DefaultClient, f.url+c.path)
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
	// The page works under its own policy: no inline script or handler.
	_, body := getRaw(t, http.DefaultClient, f.url+"/ui/")
	low := strings.ToLower(body)
	if strings.Count(low, "<script") != strings.Count(low, "<script src=") {
		t.Errorf("index.html has an inline script")
	}
	for _, attr := range []string{" onclick=", " onload=", " onsubmit=", "javascript:"} {
		if strings.Contains(low, attr) {
			t.Errorf("index.html has %q, which the policy blocks", attr)
		}
	}
}

// TestInspectorRoutes checks the redirect, unknown files, and that only
// GET reaches the files without the token.
func TestInspectorRoutes(t *testing.T) {
	f := newFixture(t, Options{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, _ := getRaw(t, noRedirect, f.url+"/ui")
	if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui = %d Location %q, want 301 to /ui/", r.StatusCode, r.Header.Get("Location"))
	}
	if r, _ := getRaw(t, http.DefaultClient, f.url+"/ui/nope.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js = %d, want 404", r.StatusCode)
	}
	if r, body := getRaw(t, http.DefaultClient, f.url+"/ui/../v1/sessions"); r.StatusCode == 200 && strings.Contains(body, "sessions") {
		t.Errorf("GET /ui/../v1/sessions reached the API without the token")
	}
	// The inspector's files are open, and serve GET only.
	if code, h, _ := f.do("POST", "/ui/", "x", "Authorization", ""); code != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/ without the token = %d Allow %q, want 405 Allow GET, HEAD", code, h.Get("Allow"))
	}
}

// TestModels is acceptance case 57: the catalogue lists openai with the
// Responses dialect and anthropic with Messages, ?provider= filters, and
// the route requires the token.
func TestModels(t *testing.T) {
	c, err := catalog.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Options{Models: c})
	auth := []string{"Authorization", "Bearer " + testToken}
	if code, _, _ := f.do("GET", "/v1/models", "", "Authorization", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/models without the token = %d, want 401", code)
	}
	code, _, body := f.do("GET", "/v1/models", "", auth...)
	var l catalog.ModelList
	if err := json.Unmarshal(body, &l); code != 200 || err != nil || !strings.HasPrefix(l.SnapshotDigest, "sha256:") || len(l.SnapshotDigest) != 7+64 {
		t.Fatalf("GET /v1/models = %d %s", code, body)
	}
	dialects := map[string]string{}
	for _, p := range l.Providers {
		dialects[p.ID] = p.Dialect
		if p.MediaInputs == nil || p.Models == nil {
			t.Errorf("provider %s has null arrays: %s", p.ID, body)
		}
	}
	if dialects["openai"] != "openai_responses" || dialects["anthropic"] != "anthropic_messages" {
		t.Errorf("dialects %v", dialects)
	}
	code, _, body = f.do("GET", "/v1/models?provider=anthropic", "", auth...)
	var only catalog.ModelList
	json.Unmarshal(body, &only)
	if code != 200 || len(only.Providers) != 1 || only.Providers[0].ID != "anthropic" || only.SnapshotDigest != l.SnapshotDigest {
		t.Errorf("?provider=anthropic = %d %s", code, body)
	}
	for _, q := range []struct {
		target string
		code   int
		ecode  string
	}{
		{"/v1/models?provider=nobody", 404, `"not_found"`},
		{"/v1/models?provider=", 400, `"invalid_request"`},
		{"/v1/models?provider=a%20b", 400, `"invalid_request"`},
		{"/v1/models?provider=openai&provider=anthropic", 400, `"invalid_request"`},
	} {
		code, _, body := f.do("GET", q.target, "", auth...)
		if code != q.code || !strings.Contains(string(body), q.ecode) || !strings.Contains(string(body), `"retryable":false`) {
			t.Errorf("GET %s = %d %s, want %d %s", q.target, code, body, q.code, q.ecode)
		}
	}
}

// TestInspectorErrorsAreApiErrors: a file the inspector does not have is
// answered 404 with an ApiError, as every other non-2xx answer is, not
// with a plain-text page.
func TestInspectorErrorsAreApiErrors(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{"/ui/nope.js", "/ui/nope/"} {
		r, body := getRaw(t, http.DefaultClient, f.url+p)
		var e api.ApiError
		err := json.Unmarshal([]byte(body), &e)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("Content-Type") != "application/json" || err != nil || e.Code != api.CodeNotFound || e.Message == "" {
			t.Errorf("GET %s = %d %q %q, want 404 with an ApiError not_found", p, r.StatusCode, r.Header.Get("Content-Type"), body)
		}
		if r.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: the error lost the inspector's policy", p)
		}
	}
}
