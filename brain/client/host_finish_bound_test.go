package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestHostFinishEndsByTheCallsDeadline: a handler's finish that Brain
// never answers (the connection was taken and the answer does not come)
// is given up once the call's deadline passes, as finish documents,
// instead of holding the call's request, goroutine and state until the
// client closes.
func TestHostFinishEndsByTheCallsDeadline(t *testing.T) {
	deadline := time.Now().Add(1500 * time.Millisecond)
	abandoned := make(chan time.Time, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/commands") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "event: command\ndata: {\"session_id\":\"ses_aaaaaaaaaaaaaaaaaaaa\",\"sequence\":4,\"environment\":\"h\",\"deadline_at_ms\":%d,\"operation\":{\"type\":\"invoke_tool\",\"name\":\"t\",\"input\":{}}}\n\n", deadline.UnixMilli())
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // no answer, ever
		select {
		case abandoned <- time.Now():
		default:
		}
	}))
	defer hs.Close()
	c, err := New(hs.URL, &Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h, err := c.ResumeHost(api.HostRegistration{HostID: "host_aaaaaaaaaaaaaaaaaaaa", Token: "host-token"})
	if err != nil {
		t.Fatal(err)
	}
	h.Handle("t", func(context.Context, *ToolCall) (api.Outcome, error) { return OK("done"), nil })
	select {
	case at := <-abandoned:
		if at.Before(deadline.Add(-100 * time.Millisecond)) {
			t.Fatalf("the finish was given up %v before the call's deadline", deadline.Sub(at))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unanswered finish was still under way 8 s after the call's deadline")
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		running := h.running[callKey{"ses_aaaaaaaaaaaaaaaaaaaa", 4}] != nil
		h.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the call whose finish was given up is still running")
		}
	}
}
