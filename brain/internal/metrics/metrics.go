package metrics

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxOpen bounds the effects whose start time is remembered for a latency;
// beyond it a start is not timed (its end is still counted). When the
// bound is reached, starts older than staleOpen are forgotten first: their
// ends may never be committed here (a session whose lease another node
// took, an append whose outcome is unknown).
const (
	maxOpen   = 1 << 16
	staleOpen = time.Hour
)

// Metrics is a registry of Brain's metrics. Its methods are safe for
// concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	fsync          prometheus.Histogram
	groupRecords   prometheus.Histogram
	turns          *prometheus.CounterVec
	effects        *prometheus.CounterVec
	modelSeconds   prometheus.Histogram
	toolSeconds    prometheus.Histogram
	envErrors      *prometheus.CounterVec
	sseSubscribers prometheus.Gauge
	sseLagCutoffs  prometheus.Counter
	idemHits       prometheus.Counter
	httpRequests   *prometheus.CounterVec
	httpSeconds    *prometheus.HistogramVec
	httpForwarded  *prometheus.CounterVec
	spansDropped   *prometheus.CounterVec

	mu    sync.Mutex
	open  map[effectKey]int64 // started effects: recorded_at_ms
	swept int64               // recorded_at_ms of the last forgetStaleLocked scan
}

type effectKey struct {
	session string
	seq     uint64
}

var (
	effectKinds  = map[string]bool{}
	failureCodes = map[string]bool{}
)

// envCodes are the failure codes the environment protocol names, which an
// environment operation's failure carries (a provider may answer others,
// counted as "other").
var envCodes = []string{
	envapi.CodeUnsupported, envapi.CodeEnvironmentFailed, envapi.CodeEnvironmentError,
	envapi.CodeInvalidConfiguration, envapi.CodeInvalidInput, envapi.CodeInvalidOutput, envapi.CodeTimeout,
	envapi.CodeCancelled, envapi.CodeUnavailable, envapi.CodeResourceLost, envapi.CodeBusy,
	envapi.CodeAlreadyExists, envapi.CodeAllocationFailed, envapi.CodePreparationFailed,
	envapi.CodeExecutionFailed, envapi.CodeOutputLimit, envapi.CodeCleanupFailed, envapi.CodeNoCallback,
	envapi.CodePathEscape, envapi.CodeNotFound,
}

func init() {
	for _, p := range api.EffectPrefixes {
		effectKinds[p] = true
	}
	// The codes a failure may carry: the failure codes, the API's error
	// codes (a model call fails with model_provider_failed, a turn may
	// with overloaded) and the environment protocol's.
	for _, list := range [][]string{api.FailureCodes, api.ErrorCodes, envCodes} {
		for _, c := range list {
			failureCodes[c] = true
		}
	}
}

// New returns a registry with every metric at zero, plus the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), open: map[effectKey]int64{}}
	latency := []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "brain_journal_fsync_seconds",
		Help:    "Time to flush the journal's commit log, per group commit.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})
	m.groupRecords = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "brain_journal_group_commit_records",
		Help:    "Records made durable per group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12)})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_turns_total",
		Help: "Turns ended, by outcome (ok or the failure code)."}, []string{"outcome"})
	m.effects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_effects_total",
		Help: "Effects ended, by kind and outcome (ok or the failure code)."}, []string{"kind", "outcome"})
	m.modelSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "brain_model_call_seconds",
		Help: "Model call latency, from model_call_started to its end.", Buckets: latency})
	m.toolSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "brain_tool_call_seconds",
		Help: "Tool call latency, from tool_call_started to its end.", Buckets: latency})
	m.envErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_environment_operation_errors_total",
		Help: "Failed environment operations by failure code, and unreachable environments (code unreachable)."}, []string{"code"})
	m.sseSubscribers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "brain_sse_subscribers",
		Help: "Open event streams."})
	m.sseLagCutoffs = prometheus.NewCounter(prometheus.CounterOpts{Name: "brain_sse_lag_cutoffs_total",
		Help: "Event streams ended because the subscriber lagged."})
	m.idemHits = prometheus.NewCounter(prometheus.CounterOpts{Name: "brain_idempotency_hits_total",
		Help: "Requests answered from a stored idempotent answer."})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_http_requests_total",
		Help: "API requests by route pattern and status code."}, []string{"route", "code"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "brain_http_request_seconds",
		Help: "API request duration by route pattern.", Buckets: latency}, []string{"route"})
	m.httpForwarded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_http_forwarded_requests_total",
		Help: "Writes another node forwarded to this one, their session's owner, by route pattern and status code (the other node counts them as its API requests)."},
		[]string{"route", "code"})
	m.spansDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "brain_trace_spans_dropped_total",
		Help: "Spans not exported over OTLP, by reason: queue_full (the export queue was full), export_failed (the collector was down or refused them)."},
		[]string{"reason"})
	for _, r := range spanDropReasons {
		m.spansDropped.WithLabelValues(r)
	}
	m.reg.MustRegister(m.fsync, m.groupRecords, m.turns, m.effects, m.modelSeconds, m.toolSeconds,
		m.envErrors, m.sseSubscribers, m.sseLagCutoffs, m.idemHits, m.httpRequests, m.httpSeconds, m.httpForwarded, m.spansDropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Sessions registers the session gauges: active answers the sessions this
// node holds in memory, passivated the stored sessions held in memory by
// no node (see the package documentation for a cluster).
func (m *Metrics) Sessions(active func() int, passivated func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "brain_sessions_active", Help: "Sessions held in memory."},
			func() float64 { return float64(active()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "brain_sessions_passivated",
			Help: "Stored sessions held in memory by no node (on a cluster, the same on every node)."},
			func() float64 { return float64(max(passivated(), 0)) }),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// JournalCommit records one group commit; it fits journal.Options.OnCommit.
func (m *Metrics) JournalCommit(records int, sync time.Duration) {
	if m == nil {
		return
	}
	m.fsync.Observe(sync.Seconds())
	m.groupRecords.Observe(float64(records))
}

// Durable reads one session's durable records; it fits
// journal.Options.OnDurable and keeps nothing of recs' Data.
func (m *Metrics) Durable(session string, recs []journal.Record) {
	if m == nil {
		return
	}
	for i := range recs {
		m.record(session, &recs[i])
	}
}

func (m *Metrics) record(session string, r *journal.Record) {
	kind := r.Kind
	prefix, phase, ok := cutPhase(kind)
	switch {
	case kind == api.KindTurnEnded:
		m.turns.WithLabelValues("ok").Inc()
	case kind == api.KindTurnFailed:
		m.turns.WithLabelValues(failureOf(r.Data).code()).Inc()
	case kind == api.KindEnvironmentUnreachable:
		m.envErrors.WithLabelValues("unreachable").Inc()
	case ok && effectKinds[prefix]:
		key := effectKey{session, r.Sequence}
		if phase == "started" {
			if prefix == "model_call" || prefix == "tool_call" {
				m.mu.Lock()
				if len(m.open) >= maxOpen {
					m.forgetStaleLocked(r.RecordedAtMs)
				}
				if len(m.open) < maxOpen {
					m.open[key] = r.RecordedAtMs
				}
				m.mu.Unlock()
			}
			return
		}
		outcome := "ok"
		var start uint64
		if phase == "failed" {
			f := failureOf(r.Data)
			outcome, start = f.code(), f.Sequence
			if strings.HasPrefix(prefix, "environment_") {
				m.envErrors.WithLabelValues(outcome).Inc()
			}
		} else {
			start = startOf(r.Data)
			if kind == api.KindToolCallEnded {
				outcome = toolOutcomeOf(r.Data)
			}
		}
		m.effects.WithLabelValues(prefix, outcome).Inc()
		if prefix == "model_call" || prefix == "tool_call" {
			key.seq = start
			m.mu.Lock()
			at, found := m.open[key]
			delete(m.open, key)
			m.mu.Unlock()
			if found {
				secs := float64(max(r.RecordedAtMs-at, 0)) / 1000
				if prefix == "model_call" {
					m.modelSeconds.Observe(secs)
				} else {
					m.toolSeconds.Observe(secs)
				}
			}
		}
	}
}

// forgetStaleLocked drops the starts remembered for longer than
// staleOpen before nowMs. It looks at most once a minute (of the records'
// time): a full map of live starts is not scanned at every start.
func (m *Metrics) forgetStaleLocked(nowMs int64) {
	if nowMs-m.swept < time.Minute.Milliseconds() {
		return
	}
	m.swept = nowMs
	cutoff := nowMs - staleOpen.Milliseconds()
	for k, at := range m.open {
		if at < cutoff {
			delete(m.open, k)
		}
	}
}

// cutPhase splits "tool_call_ended" into "tool_call" and "ended".
func cutPhase(kind string) (prefix, phase string, ok bool) {
	i := strings.LastIndexByte(kind, '_')
	if i < 0 {
		return "", "", false
	}
	switch p := kind[i+1:]; p {
	case "started", "ended", "failed":
		return kind[:i], p, true
	}
	return "", "", false
}

type failure struct {
	Code     string `json:"code"`
	Sequence uint64 `json:"sequence"`
}

func (f failure) code() string {
	if failureCodes[f.Code] {
		return f.Code
	}
	return "other"
}

func failureOf(data []byte) failure {
	var f failure
	_ = json.Unmarshal(data, &f)
	return f
}

// startOf answers the started sequence an *_ended record names. Brain
// writes it first ({"sequence":N,...}), which is read without decoding a
// possibly large result; anything else is decoded.
func startOf(data []byte) uint64 {
	if rest, ok := bytes.CutPrefix(data, []byte(`{"sequence":`)); ok {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && n < len(rest) && (rest[n] == ',' || rest[n] == '}') {
			if v, err := strconv.ParseUint(string(rest[:n]), 10, 64); err == nil {
				return v
			}
		}
	}
	var v struct {
		Sequence uint64 `json:"sequence"`
	}
	_ = json.Unmarshal(data, &v)
	return v.Sequence
}

// toolOutcomeOf answers the outcome label of a tool_call_ended record:
// ok, or the failure code its outcome status stands for (an error outcome
// is tool_error: the environment's own code is not a label). Brain writes
// the status first in the outcome after the sequence, which is read
// without decoding a possibly large value; anything else is decoded.
func toolOutcomeOf(data []byte) string {
	status := ""
	if rest, ok := bytes.CutPrefix(data, []byte(`{"sequence":`)); ok {
		rest = bytes.TrimLeft(rest, "0123456789")
		if rest, ok = bytes.CutPrefix(rest, []byte(`,"outcome":{"status":"`)); ok {
			if i := bytes.IndexByte(rest, '"'); i > 0 {
				status = string(rest[:i])
			}
		}
	}
	if status == "" {
		var v struct {
			Outcome struct {
				Status string `json:"status"`
			} `json:"outcome"`
		}
		_ = json.Unmarshal(data, &v)
		status = v.Outcome.Status
	}
	switch status {
	case "ok", "":
		return "ok"
	case "error":
		return api.FailureToolError
	}
	if failureCodes[status] {
		return status
	}
	return "other"
}

// StreamOpened counts an event stream that started.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.sseSubscribers.Inc()
	}
}

// StreamClosed counts an event stream that ended; lagged says it was cut
// off because its subscriber fell behind.
func (m *Metrics) StreamClosed(lagged bool) {
	if m == nil {
		return
	}
	m.sseSubscribers.Dec()
	if lagged {
		m.sseLagCutoffs.Inc()
	}
}

// IdempotencyHit counts a request answered from a stored answer.
func (m *Metrics) IdempotencyHit() {
	if m != nil {
		m.idemHits.Inc()
	}
}

// Request counts one API request by its route pattern ("" for none).
func (m *Metrics) Request(route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	route, code := requestLabels(route, status)
	m.httpRequests.WithLabelValues(route, code).Inc()
	m.httpSeconds.WithLabelValues(route).Observe(d.Seconds())
}

// Forwarded counts a write another node forwarded to this one, in
// brain_http_forwarded_requests_total only: that node counts it as its
// API request.
func (m *Metrics) Forwarded(route string, status int, _ time.Duration) {
	if m == nil {
		return
	}
	m.httpForwarded.WithLabelValues(requestLabels(route, status)).Inc()
}

// requestLabels answers the route and code labels of a request.
func requestLabels(route string, status int) (string, string) {
	if route == "" {
		route = "unmatched"
	}
	if status == 0 {
		status = http.StatusOK // a hijacked event stream
	}
	return route, strconv.Itoa(status)
}

// spanDropReasons are the reasons a span is not exported (those of
// tracing.Settings.SpansDropped).
var spanDropReasons = []string{"queue_full", "export_failed"}

// SpansDropped counts n spans not exported for reason; it fits
// tracing.Settings.SpansDropped. Another reason is counted as "other".
func (m *Metrics) SpansDropped(reason string, n int) {
	if m == nil || n <= 0 {
		return
	}
	if !slices.Contains(spanDropReasons, reason) {
		reason = "other"
	}
	m.spansDropped.WithLabelValues(reason).Add(float64(n))
}

// Telemetry registers the telemetry counters, read from stats at each
// scrape: brain_telemetry_records_total (records the sink delivered) and
// brain_telemetry_dropped_total{reason}.
func (m *Metrics) Telemetry(stats func() telemetry.Stats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&telemetryCollector{stats: stats,
		written: prometheus.NewDesc("brain_telemetry_records_total", "Telemetry records delivered: written to the file, accepted by the OTLP receiver.", nil, nil),
		dropped: prometheus.NewDesc("brain_telemetry_dropped_total", "Telemetry records dropped, by reason.", []string{"reason"}, nil)})
}

type telemetryCollector struct {
	stats            func() telemetry.Stats
	written, dropped *prometheus.Desc
}

func (c *telemetryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.written
	ch <- c.dropped
}

func (c *telemetryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(s.Written))
	for _, r := range telemetry.Reasons() {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.Dropped[r]), r)
	}
}
