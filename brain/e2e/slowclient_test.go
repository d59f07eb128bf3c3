package e2e

import (
	"bufio"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlowBodiesDoNotHoldConnections opens 200 connections that announce
// a body and never send it: health checks and unauthenticated requests
// are answered and closed at once, an authenticated request whose body
// never arrives is answered 400 and closed at the body timeout, and a
// normal turn runs meanwhile.
func TestSlowBodiesDoNotHoldConnections(t *testing.T) {
	s := start(t, "", "BRAIN_REQUEST_BODY_TIMEOUT_SECS=2")
	u, _ := url.Parse(s.URL)
	id := s.create().SessionID
	requests := []string{
		"GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET /health/ready HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n",
		"POST /v1/sessions/" + id + "/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
	}
	const n = 200
	type result struct {
		status string
		after  time.Duration
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				results[i].err = err
				return
			}
			defer c.Close()
			start := time.Now()
			if _, err := c.Write([]byte(requests[i%len(requests)])); err != nil {
				results[i].err = err
				return
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			line, err := br.ReadString('\n')
			if err != nil {
				results[i].err = err
				return
			}
			results[i].status = strings.TrimSpace(line)
			// The server closes the connection after the answer.
			for {
				if _, err := br.ReadByte(); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						results[i].err = err
					}
					break
				}
			}
			results[i].after = time.Since(start)
		})
	}
	// A normal turn is not held up by the stalled connections.
	turnStart := time.Now()
	if r := s.send(id, "hello"); r.Status != 200 {
		t.Fatalf("send while connections stall = %d %s", r.Status, r.Body)
	}
	if d := time.Since(turnStart); d > 5*time.Second {
		t.Errorf("a turn took %v while connections stalled", d)
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("connection %d (%q): %v after %v", i, requests[i%len(requests)][:20], r.err, r.after)
		}
	}
	// Authenticated, a body that never arrives is answered 400 at the body
	// timeout and its connection closed.
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	begin := time.Now()
	c.Write([]byte("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + s.Token + "\r\nIdempotency-Key: slow\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"))
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, " 400 ") {
		t.Fatalf("authenticated stalled body: %q, %v after %v", line, err, time.Since(begin))
	}
	for {
		if _, err := br.ReadByte(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection not closed after the 400")
			}
			break
		}
	}
	if d := time.Since(begin); d < time.Second || d > 6*time.Second {
		t.Errorf("stalled body answered and closed after %v, want about 2 s", d)
	}
	for i, r := range results {
		want := map[int]string{0: " 204 ", 1: " 204 ", 2: " 401 ", 3: " 401 "}[i%len(requests)]
		if !strings.Contains(r.status, want) {
			t.Errorf("connection %d: %q, want %q", i, r.status, want)
		}
		if r.after > 2*time.Second {
			t.Errorf("connection %d answered and closed after %v", i, r.after)
		}
	}
}
