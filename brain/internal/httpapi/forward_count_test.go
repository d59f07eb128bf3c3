package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/envbind"
)

// countLog is an Observer that counts the requests it is told of by
// route, apart from those another node forwarded to it.
type countLog struct {
	noObserver
	mu                  sync.Mutex
	requests, forwarded map[string]int
}

func newCountLog() *countLog {
	return &countLog{requests: map[string]int{}, forwarded: map[string]int{}}
}

func (l *countLog) Request(route string, _ int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[route]++
}

func (l *countLog) Forwarded(route string, _ int, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forwarded[route]++
}

func (l *countLog) counts(route string) (requests, forwarded int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests[route], l.forwarded[route]
}

// TestForwardedWriteIsCountedOnce: a write one node forwards to its
// session's owner is counted as a request once, by the node the client
// sent it to (with the status the client got); the owner counts it apart,
// as one it served for another node, so that the request counts summed
// over the nodes are the client's requests.
func TestForwardedWriteIsCountedOnce(t *testing.T) {
	b, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ownerLog, receiverLog := newCountLog(), newCountLog()
	owner := newFixture(t, Options{Bindings: b, Observer: ownerLog,
		Route: func(context.Context, string) (string, error) { return "", nil }})
	id := owner.create("c").SessionID
	receiver, _, _ := forwardingFixture(t, owner.url, Options{Observer: receiverLog}, false)

	const route = "POST /v1/sessions/{id}/messages"
	st, _, body := receiver.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", "k1")
	if st != http.StatusOK && st != http.StatusAccepted {
		t.Fatalf("forwarded write = %d %s", st, body)
	}
	settled(func() bool {
		r, _ := receiverLog.counts(route)
		_, f := ownerLog.counts(route)
		return r == 1 && f == 1
	})
	rr, rf := receiverLog.counts(route)
	or, of := ownerLog.counts(route)
	if rr+or != 1 || rr != 1 {
		t.Errorf("one client request counted %d times by the node it was sent to and %d by the owner; want once, by the former", rr, or)
	}
	if of != 1 || rf != 0 {
		t.Errorf("forwarded requests counted: %d by the owner, %d by the node it was sent to; want 1, 0", of, rf)
	}

	// A client's own write to the owner is a request there.
	if st, _, body := owner.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", "k2"); st >= 500 {
		t.Fatalf("direct write = %d %s", st, body)
	}
	settled(func() bool { r, _ := ownerLog.counts(route); return r == 1 })
	if r, f := ownerLog.counts(route); r != 1 || f != 1 {
		t.Errorf("after a direct write the owner counted %d requests and %d forwarded; want 1 and 1", r, f)
	}
}
