package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// referenceProfile describes the reference provider in profile JSON.
func referenceProfile(t *testing.T) string {
	t.Helper()
	profile := map[string]any{
		"token":               refToken,
		"setup_configuration": map[string]string{"label": "ci"},
		"executes": map[string]any{
			"echo":       map[string]any{"implementation": impl("echo"), "input": map[string]int{"n": 1}, "output": map[string]any{"echo": map[string]int{"n": 1}}},
			"sleep":      map[string]any{"implementation": impl("sleep"), "input": map[string]int{"ms": sleepMs}, "runs_ms": sleepMs},
			"write":      map[string]any{"implementation": impl("write"), "input": map[string]string{"key": "k", "value": "v1"}},
			"read":       map[string]any{"implementation": impl("read"), "input": map[string]string{"key": "k"}, "output_contains": map[string]any{"found": true}},
			"allocation": map[string]any{"implementation": impl("allocation"), "input": map[string]any{}},
			"stuck":      map[string]any{"implementation": impl("stuck"), "input": map[string]any{}},
			"progress":   map[string]any{"implementation": impl("progress"), "input": map[string]any{}},
		},
		"capabilities": map[string]any{
			"cancel": true, "lazy_allocation": true, "turn_end_release": "release",
			"methods": map[string]any{"inspect": map[string]any{}}, "reporter": map[string]string{"call": "report"},
		},
		"expect":  []string{"cancel", "reporter"},
		"options": map[string]any{"deadline_ms": 300, "grace_ms": 2000, "max_body_bytes": 1 << 20},
	}
	data, err := json.MarshalIndent(profile, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type junitDoc struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestRunCLI(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 1 << 20}
	tg := serveReference(t, newReference, sdk, nil)
	profile := referenceProfile(t)
	junit := filepath.Join(t.TempDir(), "out.xml")

	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--junit", junit}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	ids := conformance.IDs()
	for _, id := range ids {
		want := "PASS  " + id
		if id == "restart/binding" {
			want = "SKIP  " + id // no in-process restart hook remotely
		}
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d passed, 0 failed, 1 skipped", len(ids)-1)) {
		t.Errorf("table summary:\n%s", out)
	}

	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit: %v\n%s", err, data)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Tests != len(ids) || doc.Suites[0].Failures != 0 || doc.Suites[0].Skipped != 1 || len(doc.Suites[0].Cases) != len(ids) {
		t.Errorf("junit suite %+v", doc.Suites)
	}
	if c := doc.Suites[0].Cases[0]; c.Name != ids[0] || c.Failure != nil {
		t.Errorf("first junit case %+v", c)
	}
}

func TestRunCLIFailure(t *testing.T) {
	noAuth := envsdk.Options{StopGrace: time.Second}
	tg := serveReference(t, newReference, noAuth, nil)
	profile := referenceProfile(t)
	junit := filepath.Join(t.TempDir(), "out.xml")
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--junit", junit,
		"--run", "auth/missing-token,auth/wrong-token,contract/echo"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"FAIL  auth/missing-token", "FAIL  auth/wrong-token", "PASS  contract/echo", "1 passed, 2 failed, 0 skipped", "--- FAIL auth/wrong-token", "rule: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var doc junitDoc
	data, _ := os.ReadFile(junit)
	if err := xml.Unmarshal(data, &doc); err != nil || doc.Suites[0].Failures != 2 || doc.Suites[0].Cases[0].Failure == nil {
		t.Errorf("junit %v: %s", err, data)
	}
}

func TestRunCLIUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--url", "http://127.0.0.1:1"},
		{"--url", "http://127.0.0.1:1", "--profile", "/nonexistent/profile.json"},
		{"--url", "http://127.0.0.1:1", "--profile", referenceProfileFile(t, `{"executes":{}}`)},
		{"--url", "http://127.0.0.1:1", "--profile", referenceProfileFile(t, `{"executes":{"echo":{"implementation":1,"input":1}},"expect":["flying"]}`)},
		{"--url", "http://127.0.0.1:1", "--profile", referenceProfileFile(t, `{"executes":{"echo":{"implementation":1,"input":1}}}`), "--run", "no/such-case"},
	} {
		var stdout, stderr bytes.Buffer
		if code := conformance.RunCLI(t.Context(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr.String())
		}
	}
	var stdout bytes.Buffer
	if code := conformance.RunCLI(t.Context(), []string{"--list"}, &stdout, &stdout); code != 0 || strings.Count(stdout.String(), "\n") != len(conformance.IDs()) {
		t.Errorf("--list: %d\n%s", code, stdout.String())
	}
}

// TestRunCLIHelpOnStdout: as with "brain serve", -h prints the usage on
// stdout with ExitPass; a bad flag, or an argument the command does not
// take, exits ExitUsage with the usage on stderr and nothing on stdout.
func TestRunCLIHelpOnStdout(t *testing.T) {
	for _, h := range []string{"-h", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := conformance.RunCLI(t.Context(), []string{h}, &stdout, &stderr); code != conformance.ExitPass ||
			!strings.Contains(stdout.String(), "usage: brain conformance") || !strings.Contains(stdout.String(), "-profile") || stderr.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the usage on stdout alone", h, code, stdout.String(), stderr.String())
		}
	}
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--list", "bogus"},
		{"--url", "http://127.0.0.1:1", "--profile", referenceProfileFile(t, `{"executes":{}}`), "bogus"},
	} {
		var stdout, stderr bytes.Buffer
		if code := conformance.RunCLI(t.Context(), args, &stdout, &stderr); code != conformance.ExitUsage ||
			!strings.Contains(stderr.String(), "usage: brain conformance") || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d with the usage on stderr alone", args, code, stdout.String(), stderr.String(), conformance.ExitUsage)
		}
	}
}

func referenceProfileFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunCLIPrintsCasesAsTheyRun: stderr gets one line per case as it
// ends (status, id, duration), in run order with --serial, before the
// summary table on stdout.
func TestRunCLIPrintsCasesAsTheyRun(t *testing.T) {
	noAuth := envsdk.Options{StopGrace: time.Second}
	tg := serveReference(t, newReference, noAuth, nil)
	profile := referenceProfile(t)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--serial",
		"--run", "auth/missing-token,contract/echo,auth/wrong-token"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("stderr line %q is not STATUS ID DURATION:\n%s", l, stderr.String())
		}
		if _, err := time.ParseDuration(f[2]); err != nil {
			t.Errorf("duration %q: %v", f[2], err)
		}
		got = append(got, f[0]+" "+f[1])
	}
	// Serial runs follow the suite's case order.
	var want []string
	for _, id := range conformance.IDs() {
		switch id {
		case "auth/missing-token", "auth/wrong-token":
			want = append(want, "FAIL "+id)
		case "contract/echo":
			want = append(want, "PASS "+id)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("live lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(stdout.String(), "1 passed, 2 failed, 0 skipped") {
		t.Errorf("summary:\n%s", stdout.String())
	}
}
