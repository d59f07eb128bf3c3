package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/internal/envbind"
)

// forwardingFixture serves opts (traced when traced) with a session of
// its own whose writes are then routed to ownerURL, as those of a
// session another node took over; it answers the fixture, the session's
// id and the recorder of its spans.
func forwardingFixture(t *testing.T, ownerURL string, opts Options, traced bool) (*fixture, string, *tracetest.SpanRecorder) {
	t.Helper()
	b, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	opts.Bindings = b
	if traced {
		opts.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	}
	var routed atomic.Bool
	opts.Route = func(context.Context, string) (string, error) {
		if routed.Load() {
			return ownerURL, nil
		}
		return "", nil
	}
	f := newFixture(t, opts)
	id := f.create("c").SessionID
	routed.Store(true)
	return f, id, rec
}

// TestForwardedWriteContinuesTheTrace: a write forwarded to its session's
// owner carries the trace context of the receiving node's request span,
// so that the owner's spans (the request, the turn under it) join the
// trace of the request the client sent, with or without a traceparent
// of its own.
func TestForwardedWriteContinuesTheTrace(t *testing.T) {
	var mu sync.Mutex
	var parents []string
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"from":"owner"}`))
	}))
	defer owner.Close()
	f, id, rec := forwardingFixture(t, owner.URL, Options{}, true)
	const route = "POST /v1/sessions/{id}/messages"
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for i, incoming := range []string{"", "00-" + clientTrace + "-00f067aa0ba902b7-01"} {
		spans := len(rec.Ended())
		st, _, body := f.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`,
			"Idempotency-Key", "k"+string(rune('0'+i)), "traceparent", incoming)
		if st != http.StatusAccepted {
			t.Fatalf("forwarded write = %d %s", st, body)
		}
		span := endedSpan(rec, spans, route)
		if span == nil {
			t.Fatalf("no span %q", route)
		}
		sc := span.SpanContext()
		if incoming != "" && sc.TraceID().String() != clientTrace {
			t.Errorf("the receiving node's span is in trace %s, want the client's %s", sc.TraceID(), clientTrace)
		}
		mu.Lock()
		got := parents[len(parents)-1]
		mu.Unlock()
		want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-"
		if !strings.HasPrefix(got, want) {
			t.Errorf("client traceparent %q: the owner received traceparent %q, want the receiving node's request span %s..", incoming, got, want)
		}
	}

	// Without tracing no trace context goes on, not even the client's.
	plain, id, _ := forwardingFixture(t, owner.URL, Options{}, false)
	if st, _, body := plain.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`,
		"Idempotency-Key", "k", "traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01"); st != http.StatusAccepted {
		t.Fatalf("forwarded write = %d %s", st, body)
	}
	mu.Lock()
	got := parents[len(parents)-1]
	mu.Unlock()
	if got != "" {
		t.Errorf("without tracing the owner received traceparent %q, want none", got)
	}
}
