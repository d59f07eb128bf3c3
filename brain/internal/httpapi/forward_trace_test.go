package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/internal/envbind"
)

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
	b, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	routed := false
	f := newFixture(t, Options{Bindings: b, Tracer: tp.Tracer("test"),
		Route: func(context.Context, string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if routed {
				return owner.URL, nil
			}
			return "", nil
		},
	})
	id := f.create("c").SessionID
	mu.Lock()
	routed = true
	mu.Unlock()
	const route = "POST /v1/sessions/{id}/messages"
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for i, incoming := range []string{"", "00-" + clientTrace + "-00f067aa0ba902b7-01"} {
		spans := len(rec.Ended())
		st, _, body := f.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`,
			"Idempotency-Key", "k"+string(rune('0'+i)), "traceparent", incoming)
		if st != http.StatusAccepted {
			t.Fatalf("forwarded write = %d %s", st, body)
		}
		var span sdktrace.ReadOnlySpan
		for _, s := range rec.Ended()[spans:] {
			if s.Name() == route {
				span = s
			}
		}
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
	mu.Lock()
	routed = false
	mu.Unlock()
	plain := newFixture(t, Options{Bindings: b,
		Route: func(context.Context, string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if routed {
				return owner.URL, nil
			}
			return "", nil
		},
	})
	id = plain.create("c").SessionID
	mu.Lock()
	routed = true
	mu.Unlock()
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
