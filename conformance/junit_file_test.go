package conformance_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// TestRunCLIJUnitUnwritableFirst: a --junit file that cannot be written is
// a usage error found before the run, not after it, when the report of
// every case would be lost: not one request reaches the provider.
func TestRunCLIJUnitUnwritableFirst(t *testing.T) {
	var requests atomic.Int64
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			next.ServeHTTP(w, r)
		})
	}
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, count)
	profile := referenceProfile(t)
	dir := t.TempDir()
	for _, junit := range []string{filepath.Join(dir, "missing", "out.xml"), dir} {
		var stdout, stderr bytes.Buffer
		code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--junit", junit, "--run", "contract/echo"}, &stdout, &stderr)
		if code != conformance.ExitUsage || !strings.Contains(stderr.String(), "--junit") {
			t.Errorf("--junit %s: exit %d, want %d naming --junit\n%s%s", junit, code, conformance.ExitUsage, stdout.String(), stderr.String())
		}
		if n := requests.Swap(0); n != 0 {
			t.Errorf("--junit %s: the suite ran (%d requests to the provider) before finding it cannot write its report", junit, n)
		}
	}
}

// TestRunCLIJUnitReplacesWhole: the report replaces an earlier file whole,
// never rewriting it in place: a reader that opened the earlier file reads
// all of it, the path then holds the new report, readable by others, and
// nothing is left beside it.
func TestRunCLIJUnitReplacesWhole(t *testing.T) {
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	profile := referenceProfile(t)
	dir := t.TempDir()
	junit := filepath.Join(dir, "conformance.xml")
	earlier := []byte(strings.Repeat(`<!-- an earlier report -->`+"\n", 200))
	if err := os.WriteFile(junit, earlier, 0o644); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(junit)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	var stdout, stderr bytes.Buffer
	if code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--junit", junit, "--run", "contract/echo"}, &stdout, &stderr); code != conformance.ExitPass {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if got, _ := io.ReadAll(reader); !bytes.Equal(got, earlier) {
		t.Errorf("the earlier report was rewritten in place: a reader that had it open read %d bytes of %d:\n%.200s", len(got), len(earlier), got)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 1 {
		t.Errorf("the new report: %v\n%s", err, data)
	}
	if fi, err := os.Stat(junit); err != nil || fi.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("the report is not readable by others: %v %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files beside the report: %v", names)
	}
}

// TestRunCLIJUnitSuiteTime: the testsuite's time is the run's wall time,
// not the sum of cases that ran in parallel.
func TestRunCLIJUnitSuiteTime(t *testing.T) {
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 1 << 20}, nil)
	profile := referenceProfile(t)
	junit := filepath.Join(t.TempDir(), "out.xml")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--junit", junit,
		"--run", "deadline/timeout,exec/progress-receipt,lifecycle/full,lazy/first-use"}, &stdout, &stderr)
	wall := time.Since(start)
	if code != conformance.ExitPass {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suite struct {
			Time  string `xml:"time,attr"`
			Cases []struct {
				Time string `xml:"time,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	suite, err := strconv.ParseFloat(doc.Suite.Time, 64)
	if err != nil {
		t.Fatal(err)
	}
	var longest, sum float64
	for _, c := range doc.Suite.Cases {
		v, _ := strconv.ParseFloat(c.Time, 64)
		longest, sum = max(longest, v), sum+v
	}
	if suite > wall.Seconds() || suite < longest {
		t.Errorf("testsuite time %.3fs, want the run's wall time (%.3fs, at least the longest case's %.3fs; the cases' sum is %.3fs)\n%s", suite, wall.Seconds(), longest, sum, data)
	}
}
