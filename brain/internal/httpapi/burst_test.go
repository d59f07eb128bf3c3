package httpapi

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Once a burst of stream openings is over, the server returns the memory
// of their handshakes, and the streams go on delivering events.
func TestBurstOfStreamsReleasesMemory(t *testing.T) {
	f := newFixture(t, Options{})
	released := make(chan struct{}, 4)
	f.srv.handshakes.mu.Lock()
	f.srv.handshakes.min = 8
	f.srv.handshakes.release = func() { released <- struct{}{} }
	f.srv.handshakes.mu.Unlock()
	sum := f.create("c")
	sid := sum.SessionID
	var readers []func()
	for range 8 {
		c, br := openRaw(t, f, sid, 0)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		readers = append(readers, func() {
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				var seq uint64
				if _, err := fmt.Sscanf(line, "id: %d", &seq); err == nil && seq > sum.LastSequence {
					return
				}
			}
		})
	}
	select {
	case <-released:
	case <-time.After(20 * time.Second):
		t.Fatal("a burst of 8 stream openings released no memory")
	}
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", "m"); st != 200 {
		t.Fatalf("send = %d %s", st, b)
	}
	for _, read := range readers {
		read() // fails the test when the stream ends without the new events
	}
}

// A release waits for the burst to be over: none while a stream handshake
// runs or before a burst's worth of them, and one per burst.
func TestBurstReleasesOncePerBurstWhenOver(t *testing.T) {
	var n atomic.Int32
	b := &burst{min: 3, release: func() { n.Add(1) }}
	b.begin()
	b.end()
	b.fire()
	if got := n.Load(); got != 0 {
		t.Fatalf("%d releases after 1 stream opening, want none below a burst of 3", got)
	}
	b.begin()
	b.begin()
	b.end()
	b.fire()
	if got := n.Load(); got != 0 {
		t.Fatalf("%d releases with a stream handshake running, want none", got)
	}
	b.end()
	b.fire()
	b.fire()
	if got := n.Load(); got != 1 {
		t.Fatalf("%d releases after a burst of 3 stream openings, want 1", got)
	}
}
