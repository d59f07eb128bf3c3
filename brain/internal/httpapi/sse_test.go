package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// openRaw opens an event stream on a plain connection (no client
// goroutines) and reads the response head.
func openRaw(t *testing.T, f *fixture, sid string, rcvbuf int) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
		}
	}
	c, err := d.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", sid, testToken)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream head: %v %v", resp, err)
	}
	return c, bufio.NewReader(resp.Body)
}

// Idle streams hold no goroutine each, one stalled reader slows neither
// commits nor the other streams, and every stream gets every event once.
//
// The backlog leaves the reading streams room for a loaded machine's
// scheduling; the stalled stream is bounded by it all the same.
func TestStreamsShareOneFeed(t *testing.T) {
	f := newFixture(t, Options{MaxLiveBacklog: 48})
	sid := f.create("c").SessionID
	// Let the fixture's connections settle.
	time.Sleep(50 * time.Millisecond)
	g0 := runtime.NumGoroutine()
	const n = 40
	readers := make([]*bufio.Reader, n)
	for i := range readers {
		_, readers[i] = openRaw(t, f, sid, 0)
	}
	openRaw(t, f, sid, 4<<10) // a reader that never reads
	time.Sleep(50 * time.Millisecond)
	if g := runtime.NumGoroutine() - g0; g > 8 {
		t.Fatalf("%d idle streams added %d goroutines", n+1, g)
	}
	// The readers read as frames come; the stalled one never does.
	type result struct {
		seqs []uint64
		err  error
	}
	results := make(chan result, n)
	for _, br := range readers {
		go func() {
			var r result
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					r.err = err
					results <- r
					return
				}
				var seq uint64
				if _, err := fmt.Sscanf(line, "id: %d", &seq); err == nil {
					r.seqs = append(r.seqs, seq)
				}
				if strings.HasPrefix(line, "event: session_ended") {
					results <- r
					return
				}
			}
		}()
	}
	big := strings.Repeat("z", 32<<10)
	t0 := time.Now()
	for i := range 12 {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"`+big+`"}}`, "Idempotency-Key", fmt.Sprint("m", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("12 turns took %v with a stalled stream", d)
	}
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	var want []uint64
	st, _, b := f.do("GET", "/v1/sessions/"+sid+"/events?after=0", "")
	var page api.EventPage
	if st != 200 || json.Unmarshal(b, &page) != nil {
		t.Fatalf("events = %d", st)
	}
	for _, ev := range page.Events {
		want = append(want, ev.Sequence)
	}
	for i := range n {
		r := <-results
		if r.err != nil {
			t.Fatalf("reader %d: %v after %d events", i, r.err, len(r.seqs))
		}
		if fmt.Sprint(r.seqs) != fmt.Sprint(want) {
			t.Fatalf("reader got %v, want %v", r.seqs, want)
		}
	}
}

// pausedReader opens a stream on a new session with socket buffers of a
// few KiB on both ends (the kernel doubles the figure), which the stream
// does not read, then runs turns of 256 KiB messages: they fill those
// buffers many times over. It answers the message text.
func pausedReader(t *testing.T, opts Options, turns int) (f *fixture, sid string, br *bufio.Reader, big string) {
	t.Helper()
	f = newFixtureSndbuf(t, opts, 8<<10)
	sid = f.create("c").SessionID
	_, br = openRaw(t, f, sid, 4<<10)
	// The turns' frames must go out live, not in the catch-up, which a
	// loaded machine may still be running after the head is read.
	waitLive(t, f)
	big = strings.Repeat("z", 256<<10)
	for i := range turns {
		if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"`+big+`"}}`, "Idempotency-Key", fmt.Sprint("m", i)); st != 200 {
			t.Fatalf("send = %d %s", st, b)
		}
	}
	return f, sid, br, big
}

// waitLive waits until every open stream of f has caught up and takes
// live frames.
func waitLive(t *testing.T, f *fixture) {
	t.Helper()
	catching := func() bool {
		f.srv.feedsMu.Lock()
		streams := make([]*stream, 0, len(f.srv.streamSet))
		for st := range f.srv.streamSet {
			streams = append(streams, st)
		}
		f.srv.feedsMu.Unlock()
		for _, st := range streams {
			st.mu.Lock()
			c := st.catching
			st.mu.Unlock()
			if c {
				return true
			}
		}
		return len(streams) == 0
	}
	for deadline := time.Now().Add(20 * time.Second); catching(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream never caught up")
		}
	}
}

// A stream whose socket buffer fills while its reader pauses has the rest
// of each write finished by a writer goroutine and the frames queued
// meanwhile written after it: once the reader reads again it gets every
// event once, in order, in a well-formed chunked body.
func TestStreamFinishesWritesAfterAFullSocket(t *testing.T) {
	f, sid, br, big := pausedReader(t, Options{MaxLiveBacklog: 1000}, 8)
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	var want []uint64
	for cursor := uint64(0); ; {
		st, _, b := f.do("GET", fmt.Sprint("/v1/sessions/", sid, "/events?after=", cursor), "")
		var page api.EventPage
		if st != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("events = %d", st)
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			want = append(want, ev.Sequence)
		}
		cursor = page.NextCursor
	}
	var got []uint64
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v after %v", err, got)
		}
		var seq uint64
		if _, err := fmt.Sscanf(line, "id: %d", &seq); err == nil {
			got = append(got, seq)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"message"`) && !strings.Contains(line, big) {
			t.Fatalf("a message event lost its text (%d bytes): %.200s … %s", len(line), line, line[max(0, len(line)-200):])
		}
		if strings.HasPrefix(line, "event: session_ended") {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if f.srv.fullWrites.Load() == 0 {
		t.Fatal("no write met a full socket: the test did not pause the reader long enough")
	}
}

// A reader that stalls longer than the write timeout loses its stream cut
// off: the server closes the connection without the chunked body's last
// chunk, so the client sees a broken stream (and resumes from its last
// event id), never a body that looks complete.
func TestStalledStreamIsCutOff(t *testing.T) {
	f, _, br, _ := pausedReader(t, Options{MaxLiveBacklog: 1000, StreamWriteTimeout: 300 * time.Millisecond}, 2)
	open := func() int {
		f.srv.feedsMu.Lock()
		defer f.srv.feedsMu.Unlock()
		return len(f.srv.streamSet)
	}
	for deadline := time.Now().Add(20 * time.Second); open() > 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stalled stream was never cut off")
		}
	}
	body, err := io.ReadAll(br)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading the cut-off stream ended with %v after %d bytes, want an unexpected EOF", err, len(body))
	}
	if bytes.HasSuffix(body, []byte("0\r\n\r\n")) {
		t.Fatal("the body's last chunk was written into the middle of a cut-off chunk")
	}
}
