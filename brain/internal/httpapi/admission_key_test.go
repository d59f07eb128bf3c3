package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// countingBody counts the bytes the server reads of a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestModuleWithoutKeyIsNotRead checks that an agentloop or Tool upload
// without an Idempotency-Key is answered 400 before its body is read: the
// client, still sending, gets the 400, of which the server read no more
// than what it discards after the answer; one whose body never arrives
// gets it at once, its connection closed.
func TestModuleWithoutKeyIsNotRead(t *testing.T) {
	dir := t.TempDir()
	h, err := loophost.Open(context.Background(), loophost.Options{Dir: dir + "/agentloops", ToolsDir: dir + "/tools", MaxModuleBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	f := newFixture(t, Options{Agentloops: h})
	var read atomic.Int64
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.Body
		r.Body = countingBody{body, &read}
		f.srv.ServeHTTP(w, r)
		r.Body = body // the server looks at its own body after the handler
	}))
	t.Cleanup(counted.Close)
	module := bytes.Repeat([]byte{0}, 6<<20)
	for _, path := range []string{"/v1/agentloops", "/v1/tools"} {
		read.Store(0)
		req, _ := http.NewRequest("POST", counted.URL+path, bytes.NewReader(module))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s without a key: %v; want the 400", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "idempotency-key") {
			t.Errorf("POST %s without a key = %d %s, want 400 about the key", path, resp.StatusCode, b)
		}
		// What the client is still sending after the answer is drained,
		// within a bound: the module itself is never read.
		if n := read.Load(); n > drainBytes {
			t.Errorf("POST %s without a key: the server read %d bytes of the %d-byte module, want at most %d", path, n, len(module), drainBytes)
		}

		// A body that never arrives: announced, one byte sent.
		c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + testToken +
			"\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n\x00"))
		br := bufio.NewReader(c)
		resp, err = http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s without a key and a stalled body: %v, %v; want 400 at once", path, resp, err)
			c.Close()
			continue
		}
		_, err = io.Copy(io.Discard, br)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("POST %s: connection not closed after the 400", path)
		}
		c.Close()
	}
}
