package conformance_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// TestRunCLIHintsAtAWrongURLPrefix: a --url that already ends in the
// operations path makes every command go to a path the provider does not
// serve; stderr says so before the cases fail, and names --url. At the
// right URL there is no such line.
func TestRunCLIHintsAtAWrongURLPrefix(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	tg := serveReference(t, newReference, sdk, nil)
	profile := referenceProfile(t)
	for _, suffix := range []string{"/v1/operations", "/v1"} {
		var stdout, stderr bytes.Buffer
		code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL + suffix, "--profile", profile, "--run", "contract/echo"}, &stdout, &stderr)
		if code != conformance.ExitFail {
			t.Fatalf("--url ending in %s: exit %d, want %d\n%s%s", suffix, code, conformance.ExitFail, stdout.String(), stderr.String())
		}
		if !strings.Contains(stderr.String(), "answered 404") || !strings.Contains(stderr.String(), "--url") {
			t.Errorf("--url ending in %s: stderr gives no hint at the URL:\n%s", suffix, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--run", "contract/echo"}, &stdout, &stderr); code != conformance.ExitPass {
		t.Fatalf("exit %d at the right URL\n%s%s", code, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "answered 404") {
		t.Errorf("a hint at the URL at the right one:\n%s", stderr.String())
	}
}
