package httpapi

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
)

// statusLog is an Observer that keeps the route and status of the
// requests it is told of.
type statusLog struct {
	noObserver
	mu   sync.Mutex
	seen []string
}

func (l *statusLog) Request(route string, status int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, route+" "+http.StatusText(status))
}

func (l *statusLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestAbortedForwardIsCountedAndTraced forwards a write to an owner that
// dies half way through its answer: the relayed response is cut off, and
// the request is still counted once and its span ended, as failed.
func TestAbortedForwardIsCountedAndTraced(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"status":`))
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			t.Error(err)
			return
		}
		// The head and the start of the body went out; then nothing.
		c, _, err := rc.Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	}))
	defer owner.Close()
	log := &statusLog{}
	f, id, rec := forwardingFixture(t, owner.URL, Options{Observer: log}, true)
	before, spans := len(log.requests()), len(rec.Ended())
	const route = "POST /v1/sessions/{id}/messages"
	f.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", "k1")

	settled(func() bool { return len(log.requests()) > before })
	if got := log.requests()[before:]; len(got) != 1 || got[0] != route+" OK" {
		t.Errorf("the cut-off request was counted as %q, want once as %q", got, route+" OK")
	}
	if s := endedSpan(rec, spans, route); s == nil {
		t.Errorf("the cut-off request's span %q never ended", route)
	} else if s.Status().Code != codes.Error {
		t.Errorf("span of the cut-off request has status %v, want Error", s.Status())
	}
}
