package pythonprovider_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// undeclared are the cases profile.json does not declare: the Python
// provider has no stuck descriptor, turn-end method, reporter or restart
// hook, so those cases are skipped and every other one must pass.
var undeclared = []string{"cancel/cleanup-evidence", "deadline/cleanup-evidence", "reporter/observation", "restart/binding", "turn-end/release"}

// TestCLI checks the provider as a CI job does: brain conformance with a
// JUnit report.
func TestCLI(t *testing.T) {
	url := startProvider(t, "provider.py")
	report := filepath.Join(t.TempDir(), "conformance.xml")
	out, code := brain(t, "conformance", "--url", url, "--token", token, "--profile", "profile.json", "--junit", report)
	if code != conformance.ExitPass {
		t.Fatalf("brain conformance exited %d, want %d\n%s", code, conformance.ExitPass, out)
	}
	failed, skipped, total := junitResults(t, report)
	if len(failed) > 0 || !slices.Equal(skipped, undeclared) || total != len(conformance.IDs()) {
		t.Errorf("failed %v, skipped %v (want %v), %d cases (want %d)\n%s", failed, skipped, undeclared, total, len(conformance.IDs()), out)
	}
}

// TestRemote checks the provider through the conformance package's
// TestRemote, with the profile named relative to this directory: it is
// read from the caller's directory, not the conformance package's.
func TestRemote(t *testing.T) {
	url := startProvider(t, "provider.py")
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestRemote$", "github.com/brain-in-go/brain/conformance",
		"-args", "-conformance.url="+url, "-conformance.token="+token, "-conformance.profile=profile.json")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test TestRemote: %v\n%s", err, out)
	}
	for _, id := range conformance.IDs() {
		want := "--- PASS: TestRemote/" + id + " "
		if slices.Contains(undeclared, id) {
			want = "--- SKIP: TestRemote/" + id + " "
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("TestRemote output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestBrokenCopy runs the suite against a copy that skips authentication
// and answers the wrong sequence: exactly the matching cases fail, and the
// exit status says a case failed.
func TestBrokenCopy(t *testing.T) {
	url := startProvider(t, filepath.Join("testdata", "broken_provider.py"))
	report := filepath.Join(t.TempDir(), "conformance.xml")
	out, code := brain(t, "conformance", "--url", url, "--token", token, "--profile", "profile.json", "--junit", report)
	if code != conformance.ExitFail {
		t.Fatalf("brain conformance exited %d, want %d\n%s", code, conformance.ExitFail, out)
	}
	failed, skipped, _ := junitResults(t, report)
	want := []string{"auth/missing-token", "auth/wrong-token", "contract/echo"}
	if !slices.Equal(failed, want) || !slices.Equal(skipped, undeclared) {
		t.Errorf("failed %v, want %v; skipped %v, want %v\n%s", failed, want, skipped, undeclared, out)
	}
	for _, msg := range []string{"answered 200, want 401", "setup answered sequence 2, want 1"} {
		if !strings.Contains(out, msg) {
			t.Errorf("output lacks %q:\n%s", msg, out)
		}
	}
}

// TestExitStatuses: an unreachable provider and an invalid profile are
// told apart from a failed case.
func TestExitStatuses(t *testing.T) {
	if out, code := brain(t, "conformance", "--url", "http://127.0.0.1:1", "--token", token, "--profile", "profile.json", "--wait", "1s"); code != conformance.ExitUnreachable {
		t.Errorf("unreachable provider: exit %d, want %d\n%s", code, conformance.ExitUnreachable, out)
	}
	bad := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(bad, []byte(`{"executes":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := brain(t, "conformance", "--url", "http://127.0.0.1:1", "--profile", bad); code != conformance.ExitUsage {
		t.Errorf("invalid profile: exit %d, want %d\n%s", code, conformance.ExitUsage, out)
	}
}
