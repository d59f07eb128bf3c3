package conformance_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// TestRunCLISaysWhatIsMissing: a command line without --url or --profile
// exits ExitUsage saying which of them is missing, not only printing the
// usage, and names neither when it is given.
func TestRunCLISaysWhatIsMissing(t *testing.T) {
	profile := referenceProfileFile(t, `{"executes":{}}`)
	for _, c := range []struct {
		args         []string
		missing, not []string
	}{
		{[]string{"--url", "http://127.0.0.1:1"}, []string{"missing --profile"}, []string{"--url URL ("}},
		{[]string{"--profile", profile}, []string{"missing --url"}, []string{"--profile FILE ("}},
		{nil, []string{"missing --url", "--profile FILE ("}, nil},
	} {
		var stdout, stderr bytes.Buffer
		code := conformance.RunCLI(t.Context(), c.args, &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != conformance.ExitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage: brain conformance") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d with the usage on stderr", c.args, code, stdout.String(), stderr.String(), conformance.ExitUsage)
		}
		for _, m := range c.missing {
			if !strings.Contains(first, m) {
				t.Errorf("%q: first line %q does not say %q", c.args, first, m)
			}
		}
		for _, m := range c.not {
			if strings.Contains(first, m) {
				t.Errorf("%q: first line %q says %q, which is given", c.args, first, m)
			}
		}
	}
}
