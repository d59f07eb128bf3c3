package conformance_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// TestRunCLIRefusesCredentialsInURL: a --url carrying a user and password
// is a usage error, and nothing the command prints quotes the password,
// whether or not the rest of the URL is valid.
func TestRunCLIRefusesCredentialsInURL(t *testing.T) {
	const secret = "hunter2-conformance-secret"
	profile := referenceProfile(t)
	for _, url := range []string{
		"http://ci:" + secret + "@127.0.0.1:1",
		"http://ci:" + secret + "@127.0.0.1:1/prefix?q=1",
		"ftp://ci:" + secret + "@127.0.0.1:1",
		"http://ci:" + secret + "@127.0.0.1:port",
		"http://ci:" + secret + "@[::1",
	} {
		var stdout, stderr bytes.Buffer
		code := conformance.RunCLI(t.Context(), []string{"--url", url, "--profile", profile, "--wait", "1s"}, &stdout, &stderr)
		if code != conformance.ExitUsage {
			t.Errorf("--url %s: exit %d, want %d\n%s%s", url, code, conformance.ExitUsage, stdout.String(), stderr.String())
		}
		if out := stdout.String() + stderr.String(); strings.Contains(out, secret) {
			t.Errorf("--url %s: the password is printed:\n%s", url, out)
		}
		if !strings.Contains(stderr.String(), "--url") {
			t.Errorf("--url %s: the error does not name --url:\n%s", url, stderr.String())
		}
	}
}
