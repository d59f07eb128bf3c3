package metrics_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/metrics"
)

// scrape parses the text exposition of url.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// value answers the value of the sample of family name whose labels
// include want (a counter or gauge value, a histogram's count).
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	sum := 0.0
samples:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue samples
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestRecordsFromTheJournal feeds records the way the journal hands them
// over and reads the counters they move.
func TestRecordsFromTheJournal(t *testing.T) {
	m := metrics.New()
	const s = "ses_aaaaaaaaaaaaaaaaaaaa"
	m.Durable(s, []journal.Record{
		{Sequence: 5, Kind: "turn_started", RecordedAtMs: 1000, Data: []byte(`{}`)},
		{Sequence: 7, Kind: "model_call_started", RecordedAtMs: 1000, Data: []byte(`{}`)},
		{Sequence: 8, Kind: "model_call_ended", RecordedAtMs: 1250, Data: []byte(`{"sequence":7,"result":{}}`)},
		{Sequence: 9, Kind: "tool_call_started", RecordedAtMs: 1250, Data: []byte(`{}`)},
		{Sequence: 10, Kind: "tool_call_failed", RecordedAtMs: 3250, Data: []byte(`{"code":"timeout","retryable":false,"ambiguous":false,"sequence":9}`)},
		{Sequence: 11, Kind: "environment_call_failed", RecordedAtMs: 3250, Data: []byte(`{"code":"no such code","sequence":3}`)},
		{Sequence: 12, Kind: "turn_failed", RecordedAtMs: 3300, Data: []byte(`{"code":"tool_error","sequence":5}`)},
		{Sequence: 13, Kind: "environment_unreachable", RecordedAtMs: 3300, Data: []byte(`{}`)},
		{Sequence: 14, Kind: "turn_ended", RecordedAtMs: 3300, Data: []byte(`{"sequence":5}`)},
	})
	m.JournalCommit(9, 2*time.Millisecond)
	m.Request("POST /v1/sessions", 200, time.Millisecond)
	m.Forwarded("POST /v1/sessions/{id}/messages", 202, time.Millisecond)
	m.IdempotencyHit()
	m.StreamOpened()
	m.StreamOpened()
	m.StreamClosed(true)
	m.Sessions(func() int { return 2 }, func() int { return 3 })

	rec := &recorder{header: http.Header{}}
	m.Handler().ServeHTTP(rec, httpRequest(t))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.body.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"brain_turns_total", []string{"outcome", "ok"}, 1},
		{"brain_turns_total", []string{"outcome", "tool_error"}, 1},
		{"brain_effects_total", []string{"kind", "model_call", "outcome", "ok"}, 1},
		{"brain_effects_total", []string{"kind", "tool_call", "outcome", "timeout"}, 1},
		{"brain_effects_total", []string{"kind", "environment_call", "outcome", "other"}, 1},
		{"brain_environment_operation_errors_total", []string{"code", "other"}, 1},
		{"brain_environment_operation_errors_total", []string{"code", "unreachable"}, 1},
		{"brain_model_call_seconds", nil, 1},
		{"brain_tool_call_seconds", nil, 1},
		{"brain_journal_fsync_seconds", nil, 1},
		{"brain_journal_group_commit_records", nil, 1},
		{"brain_http_requests_total", []string{"route", "POST /v1/sessions", "code", "200"}, 1},
		{"brain_http_requests_total", []string{"route", "POST /v1/sessions/{id}/messages", "code", "202"}, 0},
		{"brain_http_forwarded_requests_total", []string{"route", "POST /v1/sessions/{id}/messages", "code", "202"}, 1},
		{"brain_idempotency_hits_total", nil, 1},
		{"brain_sse_subscribers", nil, 1},
		{"brain_sse_lag_cutoffs_total", nil, 1},
		{"brain_sessions_active", nil, 2},
		{"brain_sessions_passivated", nil, 3},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Latencies come from the records' times: 250 ms and 2 s.
	h := fams["brain_model_call_seconds"].Metric[0].Histogram
	if h.GetSampleSum() != 0.25 {
		t.Errorf("model call seconds sum %v, want 0.25", h.GetSampleSum())
	}
	if h := fams["brain_tool_call_seconds"].Metric[0].Histogram; h.GetSampleSum() != 2 {
		t.Errorf("tool call seconds sum %v, want 2", h.GetSampleSum())
	}
}

// TestMetricsOfARealTurn scrapes a real Brain's /metrics (behind its
// token) before and after a tool turn and sees the counters move.
func TestMetricsOfARealTurn(t *testing.T) {
	const token = "metrics-test-token"
	base := braintest.Serve(t, t.TempDir(), token, "--no-workspace=false")

	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without the token = %v %v, want 401", resp.StatusCode, err)
	}
	do := requester(t, base, token)
	sum := createShellSession(t, do)
	before := scrape(t, base+"/metrics", token)

	msg := `{"input":{"message":"{\"tool_calls\":[{\"name\":\"sh\",\"input\":{\"shell\":\"echo hi\"}}]}"}}`
	if code, body := do("POST", "/v1/sessions/"+sum.SessionID+"/messages", "m1", msg); code != 200 {
		t.Fatalf("send = %d %s", code, body)
	}
	if code, _ := do("POST", "/v1/sessions/"+sum.SessionID+"/messages", "m1", msg); code != 200 {
		t.Fatalf("replayed send = %d", code)
	}
	if code, body := do("POST", "/v1/sessions/"+sum.SessionID+"/messages", "m2", `{"input":{"message":"{\"fail\":{\"code\":\"rate_limited\",\"message\":\"slow down\"}}"}}`); code/100 == 2 {
		t.Logf("failing turn answered %d %s", code, body)
	}
	after := scrape(t, base+"/metrics", token)

	moved := func(name string, want float64, labels ...string) {
		t.Helper()
		if d := value(after, name, labels...) - max(value(before, name, labels...), 0); d != want {
			t.Errorf("%s%v moved by %v, want %v", name, labels, d, want)
		}
	}
	moved("brain_turns_total", 1, "outcome", "ok")
	moved("brain_effects_total", 1, "kind", "tool_call", "outcome", "ok")
	moved("brain_effects_total", 2, "kind", "model_call", "outcome", "ok")
	moved("brain_model_call_seconds", 3)
	moved("brain_tool_call_seconds", 1)
	moved("brain_idempotency_hits_total", 1)
	moved("brain_http_requests_total", 2, "route", "POST /v1/sessions/{id}/messages", "code", "200")
	if d := value(after, "brain_turns_total") - max(value(before, "brain_turns_total"), 0); d != 2 {
		t.Errorf("turns moved by %v, want 2 (one ok, one failed)", d)
	}
	if value(after, "brain_effects_total", "kind", "model_call") == value(after, "brain_effects_total", "kind", "model_call", "outcome", "ok") {
		t.Errorf("the failed model call is not counted apart: %v", fmtFamily(after["brain_effects_total"]))
	}
	// The provider's failure is counted under the code the turn and the
	// model call failed with, the one the API answered.
	moved("brain_turns_total", 1, "outcome", "model_provider_failed")
	moved("brain_effects_total", 1, "kind", "model_call", "outcome", "model_provider_failed")
	if value(after, "brain_journal_fsync_seconds") <= value(before, "brain_journal_fsync_seconds") ||
		value(after, "brain_journal_group_commit_records") <= value(before, "brain_journal_group_commit_records") {
		t.Error("journal commit histograms did not move")
	}
	if a, p := value(after, "brain_sessions_active"), value(after, "brain_sessions_passivated"); a+p != 1 {
		t.Errorf("sessions active %v + passivated %v, want 1", a, p)
	}
}

func fmtFamily(f *dto.MetricFamily) string {
	var b strings.Builder
	for _, m := range f.Metric {
		fmt.Fprintf(&b, "%v=%v ", m.Label, m.Counter.GetValue())
	}
	return b.String()
}

type recorder struct {
	header http.Header
	body   strings.Builder
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

func httpRequest(t *testing.T) *http.Request {
	req, err := http.NewRequest("GET", "/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestFailureCodesAreLabels: every code Brain itself writes into a
// failure (the failure codes, the API's error codes a turn or a model call
// fails with, the environment protocol's named codes) is its own label;
// only a code outside those sets is "other".
func TestFailureCodesAreLabels(t *testing.T) {
	m := metrics.New()
	m.Durable("ses_aaaaaaaaaaaaaaaaaaaa", []journal.Record{
		{Sequence: 5, Kind: "turn_started", RecordedAtMs: 1000, Data: []byte(`{}`)},
		{Sequence: 7, Kind: "model_call_started", RecordedAtMs: 1000, Data: []byte(`{}`)},
		{Sequence: 8, Kind: "model_call_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"model_provider_failed","sequence":7}`)},
		{Sequence: 9, Kind: "turn_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"model_provider_failed","sequence":5}`)},
		{Sequence: 10, Kind: "model_call_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"model_output_incomplete","sequence":7}`)},
		{Sequence: 11, Kind: "turn_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"overloaded","sequence":5}`)},
		{Sequence: 12, Kind: "environment_setup_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"invalid_configuration","sequence":2}`)},
		{Sequence: 13, Kind: "environment_call_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"environment_failed","sequence":3}`)},
		{Sequence: 14, Kind: "environment_call_failed", RecordedAtMs: 1100, Data: []byte(`{"code":"session-ab12cd","sequence":4}`)},
	})
	rec := &recorder{header: http.Header{}}
	m.Handler().ServeHTTP(rec, httpRequest(t))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.body.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"brain_turns_total", []string{"outcome", "model_provider_failed"}},
		{"brain_turns_total", []string{"outcome", "overloaded"}},
		{"brain_effects_total", []string{"kind", "model_call", "outcome", "model_provider_failed"}},
		{"brain_effects_total", []string{"kind", "model_call", "outcome", "model_output_incomplete"}},
		{"brain_effects_total", []string{"kind", "environment_setup", "outcome", "invalid_configuration"}},
		{"brain_effects_total", []string{"kind", "environment_call", "outcome", "environment_failed"}},
		{"brain_effects_total", []string{"kind", "environment_call", "outcome", "other"}},
		{"brain_environment_operation_errors_total", []string{"code", "invalid_configuration"}},
		{"brain_environment_operation_errors_total", []string{"code", "environment_failed"}},
		{"brain_environment_operation_errors_total", []string{"code", "other"}},
	} {
		if got := value(fams, c.name, c.labels...); got != 1 {
			t.Errorf("%s%v = %v, want 1 (%s)", c.name, c.labels, got, fmtFamily(fams[c.name]))
		}
	}
}

// TestToolOutcomesCounted: a tool call that Brain closes with an outcome
// other than ok (tool_call_ended with is_error, the way every timed-out,
// cancelled, failed or unknown tool call ends) is counted under that
// outcome, not as ok.
func TestToolOutcomesCounted(t *testing.T) {
	m := metrics.New()
	const s = "ses_aaaaaaaaaaaaaaaaaaaa"
	ended := func(seq, start uint64, outcome string) []journal.Record {
		return []journal.Record{
			{Sequence: start, Kind: "tool_call_started", RecordedAtMs: 1000, Data: []byte(`{"name":"sh"}`)},
			{Sequence: seq, Kind: "tool_call_ended", RecordedAtMs: 1500, Data: []byte(outcome)},
		}
	}
	var recs []journal.Record
	recs = append(recs, ended(2, 1, `{"sequence":1,"outcome":{"status":"ok","value":{"is_error":true}},"is_error":false}`)...)
	recs = append(recs, ended(4, 3, `{"sequence":3,"outcome":{"status":"timeout"},"is_error":true}`)...)
	recs = append(recs, ended(6, 5, `{"sequence":5,"outcome":{"status":"cancelled"},"is_error":true,"failure":{"code":"cancelled","retryable":false,"ambiguous":false}}`)...)
	recs = append(recs, ended(8, 7, `{"sequence":7,"outcome":{"status":"error","error":{"code":"session-ab12cd","message":"boom","retryable":false}},"is_error":true}`)...)
	recs = append(recs, ended(10, 9, `{"sequence":9,"outcome":{"status":"unknown","message":"lost"},"is_error":true}`)...)
	// A field order other than Brain's is read too.
	recs = append(recs, ended(12, 11, `{"is_error":true,"outcome":{"message":"late","status":"timeout"},"sequence":11}`)...)
	m.Durable(s, recs)

	rec := &recorder{header: http.Header{}}
	m.Handler().ServeHTTP(rec, httpRequest(t))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.body.String()))
	if err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]float64{"ok": 1, "timeout": 2, "cancelled": 1, "tool_error": 1, "unknown": 1} {
		if got := value(fams, "brain_effects_total", "kind", "tool_call", "outcome", outcome); got != want {
			t.Errorf("brain_effects_total{kind=tool_call,outcome=%s} = %v, want %v (%s)", outcome, got, want, fmtFamily(fams["brain_effects_total"]))
		}
	}
	// The error code a provider chose is not a label.
	if value(fams, "brain_effects_total", "outcome", "session-ab12cd") > 0 {
		t.Errorf("a provider's error code became a label")
	}
	if got := value(fams, "brain_tool_call_seconds"); got != 6 {
		t.Errorf("tool call latencies observed %v, want 6", got)
	}
}

// TestMetricsCountToolTimeouts runs a real tool call past its deadline
// (--max-tool-secs 1) and sees brain_effects_total count it as a timeout.
func TestMetricsCountToolTimeouts(t *testing.T) {
	const token = "metrics-test-token"
	base := braintest.Serve(t, t.TempDir(), token, "--no-workspace=false", "--max-tool-secs", "1")
	do := requester(t, base, token)
	sum := createShellSession(t, do)
	msg := `{"input":{"message":"{\"tool_calls\":[{\"name\":\"sh\",\"input\":{\"shell\":\"sleep 30\"}}],\"reply\":\"done\"}"}}`
	if code, body := do("POST", "/v1/sessions/"+sum.SessionID+"/messages", "m1", msg); code != 200 {
		t.Fatalf("send = %d %s", code, body)
	}
	_, events := do("GET", "/v1/sessions/"+sum.SessionID+"/events", "", "")
	if !strings.Contains(events, `"outcome":{"status":"timeout"}`) {
		t.Fatalf("the tool call did not time out: %s", events)
	}
	after := scrape(t, base+"/metrics", token)
	if got := value(after, "brain_effects_total", "kind", "tool_call", "outcome", "timeout"); got != 1 {
		t.Errorf("brain_effects_total{kind=tool_call,outcome=timeout} = %v, want 1 (%s)", got, fmtFamily(after["brain_effects_total"]))
	}
	if got := value(after, "brain_effects_total", "kind", "tool_call", "outcome", "ok"); got > 0 {
		t.Errorf("the timed-out tool call counted as ok (%s)", fmtFamily(after["brain_effects_total"]))
	}
}

// requester answers a function that sends an authenticated JSON request
// to base (with an Idempotency-Key when key is not empty) and answers its
// status and body.
func requester(t *testing.T, base, token string) func(method, path, key, body string) (int, string) {
	return func(method, path, key, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// createShellSession creates a session of the scripted model with the
// built-in workspace's command tool as "sh".
func createShellSession(t *testing.T, do func(method, path, key, body string) (int, string)) (sum struct {
	SessionID string `json:"session_id"`
}) {
	t.Helper()
	code, body := do("POST", "/v1/sessions", "c1", `{"model":{"provider":"scripted","name":"demo"},
	 "environments":[{"name":"ws","driver":"workspace"}],
	 "tools":[{"name":"sh","description":"shell","input_schema":{"type":"object","properties":{"shell":{"type":"string"}},"required":["shell"]},
	   "placements":{"ws":{"implementation":{"tool":"command"}}}}]}`)
	if json.Unmarshal([]byte(body), &sum); code != 200 {
		t.Fatalf("create = %d %s", code, body)
	}
	return sum
}

// TestEventStreamMetrics follows a session's events for a while, then
// goes away: the open stream is counted while it is open and no longer
// once the client left, and its request lasted as long as the stream.
func TestEventStreamMetrics(t *testing.T) {
	const token = "metrics-stream-token"
	base := braintest.Serve(t, t.TempDir(), token, "--heartbeat-secs", "1")
	do := requester(t, base, token)
	code, body := do("POST", "/v1/sessions", "c1", `{"model":{"provider":"scripted","name":"demo"}}`)
	var sum struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(body), &sum); code != 200 {
		t.Fatalf("create = %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", base+"/v1/sessions/"+sum.SessionID+"/events?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	if got := value(scrape(t, base+"/metrics", token), "brain_sse_subscribers"); got != 1 {
		t.Errorf("brain_sse_subscribers = %v with one stream open, want 1", got)
	}
	time.Sleep(1500 * time.Millisecond)
	resp.Body.Close()
	open := time.Since(opened).Seconds()
	const route = "GET /v1/sessions/{id}/events"
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrape(t, base+"/metrics", token)
		if value(fams, "brain_sse_subscribers") == 0 || time.Now().After(deadline) {
			break
		}
	}
	if got := value(fams, "brain_sse_subscribers"); got != 0 {
		t.Errorf("brain_sse_subscribers = %v after the client left, want 0", got)
	}
	var secs float64
	for _, m := range fams["brain_http_request_seconds"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" && l.GetValue() == route {
				secs = m.Histogram.GetSampleSum()
			}
		}
	}
	if secs < open {
		t.Errorf("brain_http_request_seconds{route=%q} sum = %.3f, want the %.3f s the stream was open", route, secs, open)
	}
}

// TestLatenciesAfterAbandonedEffects: effects whose end this node never
// commits (a session whose lease another node took over) do not stop the
// latencies of later calls from being measured.
func TestLatenciesAfterAbandonedEffects(t *testing.T) {
	m := metrics.New()
	const abandoned = 1 << 16
	recs := make([]journal.Record, abandoned)
	for i := range recs {
		recs[i] = journal.Record{Sequence: uint64(i + 1), Kind: "model_call_started", RecordedAtMs: 1000, Data: []byte(`{}`)}
	}
	m.Durable("ses_aaaaaaaaaaaaaaaaaaaa", recs)
	later := int64(1000 + 2*time.Hour/time.Millisecond)
	m.Durable("ses_bbbbbbbbbbbbbbbbbbbb", []journal.Record{
		{Sequence: 3, Kind: "model_call_started", RecordedAtMs: later, Data: []byte(`{}`)},
		{Sequence: 4, Kind: "model_call_ended", RecordedAtMs: later + 500, Data: []byte(`{"sequence":3,"result":{}}`)},
	})
	rec := &recorder{header: http.Header{}}
	m.Handler().ServeHTTP(rec, httpRequest(t))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := value(fams, "brain_model_call_seconds"); got != 1 {
		t.Errorf("brain_model_call_seconds counts %v calls, want 1 (the later call)", got)
	}
}
