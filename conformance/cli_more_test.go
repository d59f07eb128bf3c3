package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

func TestRunCLIList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := conformance.RunCLI(t.Context(), []string{"--list"}, &stdout, &stderr); code != conformance.ExitPass {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	ids := conformance.IDs()
	if len(lines) != len(ids) {
		t.Fatalf("%d lines for %d cases:\n%s", len(lines), len(ids), stdout.String())
	}
	gates := map[string]string{"cancel/running": "cancel", "lazy/first-use": "lazy-allocation", "contract/echo": "-", "exec/at-most-once": "-"}
	for i, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] != ids[i] || len(f[2]) < 30 {
			t.Errorf("line %d %q: want id, capability and rule", i, line)
			continue
		}
		if want, ok := gates[f[0]]; ok && f[1] != want {
			t.Errorf("%s is gated by %q, want %q", f[0], f[1], want)
		}
	}
}

// TestRulesStateThemselves: a rule is a sentence a provider author can act
// on, not a pointer into documents the author may not have.
func TestRulesStateThemselves(t *testing.T) {
	for _, c := range conformance.Cases() {
		for _, cite := range []string{"§", "reference", "(environment protocol"} {
			if strings.Contains(c.Rule, cite) {
				t.Errorf("%s: rule cites %q instead of stating itself: %s", c.ID, cite, c.Rule)
			}
		}
	}
}

func TestRunCLIRunAndSkipPatterns(t *testing.T) {
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 1 << 20}, nil)
	profile := referenceProfile(t)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile,
		"--run", "auth/*,transport/", "--skip", "transport/body-*,transport/zero-sequence"}, &stdout, &stderr)
	if code != conformance.ExitPass {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var ran []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if id, ok := strings.CutPrefix(line, "PASS  "); ok {
			ran = append(ran, strings.Fields(id)[0])
		}
	}
	want := []string{"auth/missing-token", "auth/wrong-token", "transport/not-found", "transport/malformed-json", "transport/unknown-field", "transport/bad-identifier", "transport/duplicate-key", "transport/missing-field", "transport/wrong-contract", "transport/refused-no-effect"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v\n%s", ran, want, stdout.String())
	}
	for _, bad := range []string{"nothing/*", "[", "exec/no-such-case"} {
		stdout.Reset()
		stderr.Reset()
		if code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--skip", bad}, &stdout, &stderr); code != conformance.ExitUsage {
			t.Errorf("--skip %q: exit %d, want %d", bad, code, conformance.ExitUsage)
		}
	}
}

func TestRunCLIUnreachable(t *testing.T) {
	profile := referenceProfile(t)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := conformance.RunCLI(t.Context(), []string{"--url", "http://127.0.0.1:1", "--profile", profile, "--wait", "1s"}, &stdout, &stderr)
	if code != conformance.ExitUnreachable || !strings.Contains(stderr.String(), "could not be reached") {
		t.Errorf("exit %d, want %d\n%s", code, conformance.ExitUnreachable, stderr.String())
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("gave up after %v, want about --wait", time.Since(start))
	}
	if stdout.Len() != 0 {
		t.Errorf("a table was printed for an unreachable provider:\n%s", stdout.String())
	}
}

// TestProfileOneKeyStyle: "expect" names capabilities as "capabilities"
// keys them, snake_case.
func TestProfileOneKeyStyle(t *testing.T) {
	base := `{"executes":{"echo":{"implementation":1,"input":1}},"capabilities":{"lazy_allocation":true,"turn_end_release":"release"},"expect":%s}`
	p, err := conformance.ParseProfile([]byte(strings.Replace(base, "%s", `["lazy_allocation","turn_end_release","cancel"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.RunOptions().Expect; !slices.Equal(got, []string{conformance.CapLazyAllocation, conformance.CapTurnEndRelease, conformance.CapCancel}) {
		t.Errorf("expect became %v", got)
	}
	if _, err := conformance.ParseProfile([]byte(strings.Replace(base, "%s", `["lazy-allocation"]`, 1))); err == nil || !strings.Contains(err.Error(), "lazy_allocation") {
		t.Errorf("a kebab-case expect entry: %v, want an error naming lazy_allocation", err)
	}
}

// TestFailureNamesRealCause: a timeout answered promptly but without
// "retryable" is reported as an invalid answer, with its time, not as a
// missing answer.
func TestFailureNamesRealCause(t *testing.T) {
	dropRetryable := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &buffered{header: http.Header{}, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			var doc map[string]any
			body := rec.body.Bytes()
			if json.Unmarshal(body, &doc) == nil {
				if rc, ok := doc["receipt"].(map[string]any); ok && rc["type"] == "failure" {
					delete(rc, "retryable")
					body, _ = json.Marshal(doc)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.status)
			_, _ = io.Copy(w, bytes.NewReader(body))
		})
	}
	opts := testOptions
	opts.Run = []string{"deadline/timeout"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, dropRetryable)
	}, &opts)
	if len(report.Results) != 1 || report.Results[0].Status != conformance.Fail {
		t.Fatalf("want deadline/timeout to fail:\n%s", details(report))
	}
	msg := strings.Join(report.Results[0].Log, "\n")
	if !strings.Contains(msg, "answered 200 after") || !strings.Contains(msg, "not a valid response") || !strings.Contains(msg, "retryable") || strings.Contains(msg, "no answer") || strings.Contains(msg, "not answered") {
		t.Errorf("the failure does not name the real cause:\n%s", msg)
	}
}

// TestRunCLIHintsAtARefusedToken: when the provider answers 401 to the
// token the run was given, stderr says so before the cases fail, so the
// user checks --token instead of reading every auth failure; with the
// right token there is no such line.
func TestRunCLIHintsAtARefusedToken(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	tg := serveReference(t, newReference, sdk, nil)
	profile := referenceProfile(t)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--token", "not-" + refToken,
		"--run", "contract/echo"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "refused the token") || !strings.Contains(stderr.String(), "--token") {
		t.Fatalf("stderr gives no hint at the refused token:\n%s", stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", profile, "--run", "contract/echo"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d with the right token\n%s%s", code, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "refused the token") {
		t.Fatalf("a hint at a refused token with the right one:\n%s", stderr.String())
	}
}

// TestRunCLIMalformedURL: a --url that is not an absolute http(s) URL
// Brain could post to is a usage error, reported at once, not a provider
// that could not be reached after --wait.
func TestRunCLIMalformedURL(t *testing.T) {
	profile := referenceProfile(t)
	for _, url := range []string{
		"127.0.0.1:8090",
		"provider:8090",
		"ftp://127.0.0.1:1",
		"http//127.0.0.1:1",
		"http://",
		"/v1/operations",
		"http://127.0.0.1:1/base?token=x",
		"http://127.0.0.1:1/base#frag",
	} {
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := conformance.RunCLI(t.Context(), []string{"--url", url, "--profile", profile, "--wait", "20s"}, &stdout, &stderr)
		if code != conformance.ExitUsage || !strings.Contains(stderr.String(), "--url") {
			t.Errorf("--url %q: exit %d, want %d naming --url\n%s", url, code, conformance.ExitUsage, stderr.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("--url %q: gave up after %v, want at once", url, d)
		}
	}
}

// TestRunCLINothingSelected: a --skip that leaves out every case --run
// selects is a usage error; a run of no case would pass any provider.
func TestRunCLINothingSelected(t *testing.T) {
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	profile := referenceProfile(t)
	for _, args := range [][]string{
		{"--run", "auth/", "--skip", "auth/*"},
		{"--skip", "*/*"},
	} {
		var stdout, stderr bytes.Buffer
		code := conformance.RunCLI(t.Context(), append([]string{"--url", tg.BaseURL, "--profile", profile}, args...), &stdout, &stderr)
		if code != conformance.ExitUsage || !strings.Contains(stderr.String(), "every case") {
			t.Errorf("%v: exit %d, want %d saying no case is left\n%s%s", args, code, conformance.ExitUsage, stdout.String(), stderr.String())
		}
	}
}

// TestRunCLIWaitsBehindAGateway: a gateway in front of a provider that is
// not up yet answers 503; --wait waits on for the provider instead of
// running every case against the gateway, and a gateway that never gets
// an answer is an unreachable provider.
func TestRunCLIWaitsBehindAGateway(t *testing.T) {
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
	var up atomic.Bool
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		}
		proxy := httputil.NewSingleHostReverseProxy(must(url.Parse(tg.BaseURL)))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gateway.Close)
	profile := referenceProfile(t)

	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", gateway.URL, "--profile", profile, "--run", "contract/echo", "--wait", "1s"}, &stdout, &stderr)
	if code != conformance.ExitUnreachable || !strings.Contains(stderr.String(), "503") {
		t.Errorf("a gateway answering 503 throughout: exit %d, want %d naming the 503\n%s%s", code, conformance.ExitUnreachable, stdout.String(), stderr.String())
	}

	time.AfterFunc(500*time.Millisecond, func() { up.Store(true) })
	stdout.Reset()
	stderr.Reset()
	code = conformance.RunCLI(t.Context(), []string{"--url", gateway.URL, "--profile", profile, "--run", "contract/echo", "--wait", "20s"}, &stdout, &stderr)
	if code != conformance.ExitPass {
		t.Errorf("a provider up behind the gateway within --wait: exit %d, want %d\n%s%s", code, conformance.ExitPass, stdout.String(), stderr.String())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRunCLIInterrupted: a run interrupted (SIGINT, SIGTERM: its context
// ends) does not blame the provider: the cases it did not start are
// skipped saying why, the case it cut short says it was interrupted, and
// the exit status is not a pass.
func TestRunCLIInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The interruption comes as deadline/timeout sends its echo with a
	// deadline_ms longer than a 32-bit timer holds, which no other case
	// sends.
	interrupt := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"deadline_ms":3000000000`)) {
				cancel()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}
	tg := serveReference(t, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, interrupt)
	profile := referenceProfile(t)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(ctx, []string{"--url", tg.BaseURL, "--profile", profile, "--serial",
		"--run", "contract/echo,deadline/timeout,concurrency/shared-binding,lazy/first-use"}, &stdout, &stderr)
	if code != conformance.ExitFail {
		t.Fatalf("exit %d, want %d\n%s%s", code, conformance.ExitFail, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"PASS  contract/echo", "SKIP  concurrency/shared-binding", "SKIP  lazy/first-use", "not run: the run was interrupted", "FAIL  deadline/timeout", "the run was interrupted while this case ran"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
}
