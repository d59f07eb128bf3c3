package httpapi

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// TestRequestSpanSessionIDOnlyForSessionRoutes: a request span carries
// brain.session_id when its route names a session, and not when the
// {id} of its route names a tool or an agentloop.
func TestRequestSpanSessionIDOnlyForSessionRoutes(t *testing.T) {
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), ToolsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	rec := tracetest.NewSpanRecorder()
	f := newFixture(t, Options{Agentloops: h, Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")})
	id := f.create("c").SessionID
	for _, c := range []struct{ path, route, want string }{
		{"/v1/sessions/" + id, "GET /v1/sessions/{id}", id},
		{"/v1/tools/tool_x", "GET /v1/tools/{id}", ""},
		{"/v1/agentloops/loop_x", "GET /v1/agentloops/{id}", ""},
	} {
		from := len(rec.Ended())
		f.do("GET", c.path, "")
		span := endedSpan(rec, from, c.route)
		if span == nil {
			t.Fatalf("no span %q", c.route)
		}
		got := ""
		for _, a := range span.Attributes() {
			if a.Key == session.AttrSessionID {
				got = a.Value.AsString()
			}
		}
		if got != c.want {
			t.Errorf("%s: %s = %q, want %q", c.route, session.AttrSessionID, got, c.want)
		}
	}
}
