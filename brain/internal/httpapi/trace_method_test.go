package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// syncBuffer is a bytes.Buffer a logger and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestRequestSpanOfAnUnknownMethod: the span of a request whose method
// HTTP does not define is named "HTTP" with http.request.method "_OTHER"
// and the method the client sent, cut to a bound, in
// http.request.method_original; a request no route takes carries no
// http.route and is named by its method when HTTP defines it. Neither a
// span nor the request log carries a method a client made up whole.
func TestRequestSpanOfAnUnknownMethod(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	logs := &syncBuffer{}
	f := newFixture(t, Options{
		Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test"),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	long := strings.Repeat("FROB", 10<<10/4) // a 10 KiB method token
	cases := []struct {
		method, path   string
		status         int
		name, attr     string
		original, want string // method_original sent and recorded ("" none)
	}{
		{"FROB", "/v1/nothing", 404, "HTTP", "_OTHER", "FROB", "FROB"},
		{"FROB", "/v1/sessions", 405, "HTTP", "_OTHER", "FROB", "FROB"},
		{long, "/v1/sessions", 405, "HTTP", "_OTHER", long, long[:maxMethodOriginal]},
		{"get", "/v1/sessions", 405, "HTTP", "_OTHER", "get", "get"},
		{"PUT", "/v1/nothing", 404, "PUT", "PUT", "", ""},
		{"GET", "/v1/sessions", 200, "GET /v1/sessions", "GET", "", ""},
	}
	for _, c := range cases {
		from := len(rec.Ended())
		if st, _, b := f.do(c.method, c.path, ""); st != c.status {
			t.Fatalf("%.16s %s = %d %s, want %d", c.method, c.path, st, b, c.status)
		}
		if !settled(func() bool { return len(rec.Ended()) > from }) {
			t.Fatalf("%.16s %s: no span ended", c.method, c.path)
		}
		checkMethodSpan(t, rec.Ended()[from], c.name, c.attr, c.want, c.path == "/v1/sessions" && c.status == 200)
	}

	// A request for "*" is one no route takes, whatever its method.
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	from := len(rec.Ended())
	fmt.Fprintf(conn, "%s * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", long)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%.16s * = %d, want 400", long, resp.StatusCode)
	}
	if !settled(func() bool { return len(rec.Ended()) > from }) {
		t.Fatal("request for *: no span ended")
	}
	checkMethodSpan(t, rec.Ended()[from], "HTTP", "_OTHER", long[:maxMethodOriginal], false)

	if !settled(func() bool { return strings.Count(logs.String(), "msg=request") >= len(cases)+1 }) {
		t.Fatalf("requests not logged:\n%s", logs.String())
	}
	if got := logs.String(); strings.Contains(got, long[:maxMethodOriginal+1]) || strings.Contains(got, "method=FROB") ||
		strings.Count(got, "method=_OTHER") != 5 {
		t.Errorf("request log names methods a client made up:\n%.2000s", got)
	}
}

// checkMethodSpan checks the name and method attributes of a request
// span, and that it carries http.route only when routed.
func checkMethodSpan(t *testing.T, s sdktrace.ReadOnlySpan, name, method, original string, routed bool) {
	t.Helper()
	attrs := map[attribute.Key]string{}
	for _, a := range s.Attributes() {
		if a.Value.Type() == attribute.STRING {
			attrs[a.Key] = a.Value.AsString()
		}
	}
	got, hasOriginal := attrs["http.request.method_original"]
	_, hasRoute := attrs["http.route"]
	if s.Name() != name || attrs["http.request.method"] != method || got != original || hasOriginal != (original != "") || hasRoute != routed {
		t.Errorf("span %.80q: http.request.method %.80q, method_original %.80q (%v), http.route %q; want span %q, method %q, method_original %.80q, routed %v",
			s.Name(), attrs["http.request.method"], got, hasOriginal, attrs["http.route"], name, method, original, routed)
	}
}
