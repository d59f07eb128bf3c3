package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
)

// requestLog is an Observer that keeps the routes of the requests it is
// told of.
type requestLog struct {
	noObserver
	mu     sync.Mutex
	routes []string
}

func (l *requestLog) Request(route string, status int, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.routes = append(l.routes, route)
}

func (l *requestLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.routes...)
}

func newBinder(t *testing.T) *envbind.Binder {
	t.Helper()
	b, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEnvironmentCallIsOneRequest checks that an environment call is
// counted, and traced, as one request of its own route.
func TestEnvironmentCallIsOneRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	log := &requestLog{}
	f := newFixture(t, Options{Bindings: newBinder(t), Observer: log, Tracer: tp.Tracer("test")})
	id := f.create("c").SessionID
	before, spans := len(log.seen()), len(rec.Ended())
	st, _, b := f.do("POST", "/v1/sessions/"+id+"/environments/box/calls/inspect", `{"input":{}}`, "Idempotency-Key", "k1")
	if st != http.StatusNotFound {
		t.Fatalf("call of an environment the session lacks = %d %s, want 404", st, b)
	}
	settled(func() bool { return len(log.seen()) > before && len(rec.Ended()) > spans })
	got := log.seen()[before:]
	if len(got) != 1 || got[0] != PatternEnvCall {
		t.Errorf("the call was counted as %q, want once as %q", got, PatternEnvCall)
	}
	ended := rec.Ended()[spans:]
	if len(ended) != 1 || ended[0].Name() != PatternEnvCall {
		names := make([]string, len(ended))
		for i, s := range ended {
			names[i] = s.Name()
		}
		t.Errorf("the call was traced as spans %q, want one named %q", names, PatternEnvCall)
	}
	// The route is the only path of the call: the same path with a
	// trailing slash is no route.
	if st, _, b := f.do("POST", "/v1/sessions/"+id+"/environments/box/calls/inspect/", `{"input":{}}`, "Idempotency-Key", "k2"); st != http.StatusNotFound {
		t.Errorf("call with a trailing slash = %d %s, want 404", st, b)
	}
}

// TestDuplicateKeysAreMalformedJSON checks that a body with a member
// given twice answers 400 invalid_request naming the key on every route
// that reads JSON, as malformed JSON does.
func TestDuplicateKeysAreMalformedJSON(t *testing.T) {
	f := newFixture(t, Options{Bindings: newBinder(t)})
	sp := "/v1/sessions/" + f.create("c").SessionID
	for i, c := range []struct{ path, body, key string }{
		{"/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"model":{"provider":"scripted","name":"m"}}`, "model"},
		{sp + "/messages", `{"input":{"message":"a","message":"b"}}`, "input.message"},
		{sp + "/environments", `{"operation":"list","operation":"list"}`, "operation"},
		{sp + "/environments/box/calls/inspect", `{"input":{},"input":{}}`, "input"},
		{sp + "/environments/box/calls/inspect", `{"input":{"a":1,"a":2}}`, "input.a"},
	} {
		st, _, b := f.do("POST", c.path, c.body, "Idempotency-Key", "d"+string(rune('a'+i)))
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != http.StatusBadRequest || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, `"`+c.key+`"`) {
			t.Errorf("POST %s %s = %d %s, want 400 invalid_request naming %q", c.path, c.body, st, b, c.key)
		}
	}
}

// TestWrongMethodOnEnvironmentPaths checks that the environment call and
// reporter paths answer a wrong method 405 with Allow: POST, and that
// other paths of their shape, which POST does not serve, answer 404.
func TestWrongMethodOnEnvironmentPaths(t *testing.T) {
	f := newFixture(t, Options{Bindings: newBinder(t)})
	sp := "/v1/sessions/" + f.create("c").SessionID + "/environments/box"
	for _, p := range []string{sp + "/calls/inspect", sp + "/3/events"} {
		if st, h, b := f.do("GET", p, ""); st != http.StatusMethodNotAllowed || h.Get("Allow") != "POST" {
			t.Errorf("GET %s = %d Allow %q %s, want 405 Allow POST", p, st, h.Get("Allow"), b)
		}
	}
	for _, p := range []string{sp + "/3/other", sp + "/x/events", sp + "/0/events", sp + "/a/b"} {
		if st, _, b := f.do("POST", p, `{}`); st != http.StatusNotFound {
			t.Fatalf("POST %s = %d %s, want 404", p, st, b)
		}
		for _, m := range []string{"GET", "OPTIONS"} {
			if st, h, b := f.do(m, p, ""); st != http.StatusNotFound || h.Get("Allow") != "" {
				t.Errorf("%s %s = %d Allow %q %s, want 404 as POST there is", m, p, st, h.Get("Allow"), b)
			}
		}
	}
}
