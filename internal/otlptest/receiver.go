package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request.
const maxBody = 16 << 20

// Span is one received span, its ids in lower-case hex.
type Span struct {
	Service      string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Name         string
	Kind         string
	Attributes   map[string]any
	StatusCode   string
	StatusText   string
	// Resource are the attributes of the span's resource.
	Resource map[string]any
}

// Log is one received log record.
type Log struct {
	Service    string
	EventName  string
	Body       any
	Attributes map[string]any
	Time       time.Time
	TraceID    string
	SpanID     string
}

// Receiver collects what exporters send it. Create it with Start.
type Receiver struct {
	srv  *httptest.Server
	grpc *grpcReceiver

	mu      sync.Mutex
	spans   []Span
	logs    []Log
	headers []http.Header
	bad     int

	refuse    int            // the status of every export (0: accept them)
	rejectLog func(Log) bool // the log records to reject (nil: none)
}

// Start serves a receiver on a loopback port until Close.
func Start() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) URL() string {
	if r.grpc != nil {
		return r.grpc.url
	}
	return r.srv.URL
}

// Close stops the receiver.
func (r *Receiver) Close() {
	if r.grpc != nil {
		r.grpc.srv.Stop()
		return
	}
	r.srv.Close()
}

// Spans answers the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Logs answers the log records received so far.
func (r *Receiver) Logs() []Log {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Log(nil), r.logs...)
}

// Headers answers the headers of every export request received.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Rejected counts export requests that did not decode.
func (r *Receiver) Rejected() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.reject(w, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(body)
		if err != nil {
			r.reject(w, http.StatusBadRequest)
			return
		}
		body = io.LimitReader(gz, maxBody)
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		r.reject(w, http.StatusBadRequest)
		return
	}
	if status := r.refusal(); status != 0 {
		w.WriteHeader(status)
		return
	}
	var out proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		var in coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &in); err != nil {
			r.reject(w, http.StatusBadRequest)
			return
		}
		r.addSpans(&in, req.Header)
		out = &coltrace.ExportTraceServiceResponse{}
	case "/v1/logs":
		var in collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(raw, &in); err != nil {
			r.reject(w, http.StatusBadRequest)
			return
		}
		out = logsAnswer(r.addLogs(&in, req.Header))
	default:
		r.reject(w, http.StatusNotFound)
		return
	}
	b, _ := proto.Marshal(out)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (r *Receiver) reject(w http.ResponseWriter, status int) {
	r.mu.Lock()
	r.bad++
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *Receiver) addSpans(in *coltrace.ExportTraceServiceRequest, h http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, h.Clone())
	for _, rs := range in.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		service, _ := res["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, Span{
					Service:      service,
					TraceID:      hex.EncodeToString(s.GetTraceId()),
					SpanID:       hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Name:         s.GetName(),
					Kind:         s.GetKind().String(),
					Attributes:   attrs(s.GetAttributes()),
					StatusCode:   s.GetStatus().GetCode().String(),
					StatusText:   s.GetStatus().GetMessage(),
					Resource:     res,
				})
			}
		}
	}
}

// addLogs keeps the log records of in, but those RejectLogs rejects,
// and answers how many it rejected.
func (r *Receiver) addLogs(in *collogs.ExportLogsServiceRequest, h http.Header) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, h.Clone())
	var rejected int64
	for _, rl := range in.GetResourceLogs() {
		service, _ := attrs(rl.GetResource().GetAttributes())["service.name"].(string)
		for _, sl := range rl.GetScopeLogs() {
			for _, l := range sl.GetLogRecords() {
				lg := Log{
					Service:    service,
					EventName:  l.GetEventName(),
					Body:       anyValue(l.GetBody()),
					Attributes: attrs(l.GetAttributes()),
					Time:       time.Unix(0, int64(l.GetTimeUnixNano())),
					TraceID:    hex.EncodeToString(l.GetTraceId()),
					SpanID:     hex.EncodeToString(l.GetSpanId()),
				}
				if r.rejectLog != nil && r.rejectLog(lg) {
					rejected++
					continue
				}
				r.logs = append(r.logs, lg)
			}
		}
	}
	return rejected
}

// logsAnswer is the answer to a logs export that rejected some records:
// an OTLP partial success when it did.
func logsAnswer(rejected int64) *collogs.ExportLogsServiceResponse {
	if rejected == 0 {
		return &collogs.ExportLogsServiceResponse{}
	}
	return &collogs.ExportLogsServiceResponse{PartialSuccess: &collogs.ExportLogsPartialSuccess{
		RejectedLogRecords: rejected, ErrorMessage: "log records rejected"}}
}

func attrs(kvs []*common.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return out
}

// anyValue converts an OTLP value to Go: string, bool, int64, float64,
// []byte, []any or map[string]any.
func anyValue(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BytesValue:
		return x.BytesValue
	case *common.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *common.AnyValue_KvlistValue:
		return attrs(x.KvlistValue.GetValues())
	}
	return nil
}
