package client

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// fakeSession is the session of the commands a fake host server sends.
const fakeSession = "ses_aaaaaaaaaaaaaaaaaaaa"

// fakeHostServer serves a host's routes as Brain would: the first
// commands connection is written frames and then kept open, a later one
// is only kept open (Brain never sends a command again), and any other
// request is handed to post. connections counts the commands
// connections.
func fakeHostServer(t *testing.T, frames []string, post http.HandlerFunc) (srv *httptest.Server, connections *atomic.Int32) {
	t.Helper()
	connections = new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/commands") {
			post(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if connections.Add(1) == 1 {
			for _, f := range frames {
				_, _ = w.Write([]byte(f))
			}
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, connections
}

// invokeFrame is the frame of an invoke_tool command of fakeSession's
// call seq of tool, due at deadline, with input (JSON).
func invokeFrame(seq uint64, deadline time.Time, tool, input string) string {
	return fmt.Sprintf("event: command\ndata: {\"session_id\":%q,\"sequence\":%d,\"environment\":\"h\",\"deadline_at_ms\":%d,\"operation\":{\"type\":\"invoke_tool\",\"name\":%q,\"input\":%s}}\n\n",
		fakeSession, seq, deadline.UnixMilli(), tool, input)
}

// resumeFakeHost serves a host of the server at url, reading lines of at
// most maxLine bytes (0: the default bound).
func resumeFakeHost(t *testing.T, url string, maxLine int) (*Client, *Host) {
	t.Helper()
	c, err := New(url, &Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	c.maxLine = maxLine
	t.Cleanup(func() { c.Close() })
	h, err := c.ResumeHost(api.HostRegistration{HostID: "host_aaaaaaaaaaaaaaaaaaaa", Token: "host-token"})
	if err != nil {
		t.Fatal(err)
	}
	return c, h
}

// awaitCallOver waits until fakeSession's call seq no longer runs on h.
func awaitCallOver(t *testing.T, h *Host, seq uint64, within time.Duration, what string) {
	t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		running := h.running[callKey{fakeSession, seq}] != nil
		h.mu.Unlock()
		if !running {
			return
		}
		if time.Now().After(end) {
			t.Fatal(what)
		}
	}
}
