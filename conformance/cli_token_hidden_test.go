package conformance_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// TestReportHidesTheToken: a provider that quotes the Authorization header
// it was sent in its answers fails its cases, and neither the report on
// stdout, stderr nor the JUnit file prints its token, nor the token
// without its last character that the auth cases send.
func TestReportHidesTheToken(t *testing.T) {
	const token = "ci-provider-token-9f3b27"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":"you sent ` + r.Header.Get("Authorization") + `"}`))
	}))
	t.Cleanup(srv.Close)
	junit := filepath.Join(t.TempDir(), "report.xml")
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", srv.URL, "--token", token, "--profile", referenceProfile(t),
		"--junit", junit, "--run", "auth/,transport/not-found,contract/echo"}, &stdout, &stderr)
	if code != conformance.ExitFail {
		t.Fatalf("exit %d, want %d\n%s%s", code, conformance.ExitFail, stdout.String(), stderr.String())
	}
	report, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "junit": string(report)} {
		if strings.Contains(out, token[:len(token)-1]) {
			t.Errorf("%s prints the token:\n%s", name, out)
		}
	}
	// The answers are still shown, the token hidden in them.
	if !strings.Contains(stdout.String(), "you sent Bearer ***") || !strings.Contains(stdout.String(), "--- FAIL auth/wrong-token") {
		t.Errorf("the report does not show the failing answers with the token hidden:\n%s", stdout.String())
	}
}
