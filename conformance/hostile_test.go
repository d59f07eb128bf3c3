package conformance_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/brain-in-go/brain/conformance"
)

// A provider's answer cannot write terminal control sequences into the
// report: a body that would clear the screen and rewrite a failed line as
// PASS is shown escaped, and the case still reads as failed.
func TestHostileAnswerIsShownEscaped(t *testing.T) {
	const hostile = "\x1b[2J\x1b[H\r\x1b[1A\x1b[2KPASS  auth/missing-token\x07\x9b31m\u009b32m"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":"` + hostile + `"}` + hostile))
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", srv.URL, "--profile", referenceProfile(t),
		"--run", "auth/missing-token,transport/not-found"}, &stdout, &stderr)
	if code != conformance.ExitFail {
		t.Fatalf("exit %d, want %d\n%s%s", code, conformance.ExitFail, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if i := strings.IndexFunc(out, func(r rune) bool {
		return r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t')
	}); i >= 0 {
		t.Errorf("the report passes the provider's control characters through (at byte %d): %q", i, out)
	}
	if !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("the report does not show the provider's answer escaped:\n%s", out)
	}
	if !strings.Contains(out, "--- FAIL auth/missing-token") {
		t.Errorf("the failed case is not reported:\n%s", out)
	}
}
