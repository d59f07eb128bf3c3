package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// A command that arrives after its deadline_at_ms (it waited in a proxy,
// or the connection was slow) runs no handler and posts nothing: Brain
// has closed the call as timed out already, and the tool's effects would
// happen after the session recorded that they did not.
func TestHostCommandPastItsDeadlineRunsNothing(t *testing.T) {
	past := time.Now().Add(-time.Second).UnixMilli()
	var (
		mu    sync.Mutex
		posts []string
	)
	onTime := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/commands") {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			// The late command, then one in time, on the same stream.
			for _, c := range []struct {
				seq uint64
				at  int64
			}{{4, past}, {5, time.Now().Add(time.Minute).UnixMilli()}} {
				fmt.Fprintf(w, "event: command\ndata: {\"session_id\":\"ses_aaaaaaaaaaaaaaaaaaaa\",\"sequence\":%d,\"environment\":\"h\",\"deadline_at_ms\":%d,\"operation\":{\"type\":\"invoke_tool\",\"name\":\"send_mail\",\"input\":{}}}\n\n", c.seq, c.at)
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(b))
		mu.Unlock()
		if strings.Contains(string(b), `"sequence":5`) {
			select {
			case onTime <- struct{}{}:
			default:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sequence":9}`))
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
	var late atomic.Int32
	h.Handle("send_mail", func(_ context.Context, call *ToolCall) (api.Outcome, error) {
		if call.Sequence == 4 {
			late.Add(1)
		}
		return OK("sent"), nil
	})
	// The command in time finished: the late one, dispatched before it,
	// was dispatched too. Its call is over once it is no longer running.
	select {
	case <-onTime:
	case <-time.After(10 * time.Second):
		t.Fatal("the command in time was never finished")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		running := h.running[callKey{"ses_aaaaaaaaaaaaaaaaaaaa", 4}] != nil
		h.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late command's call never ended")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := late.Load(); n != 0 || len(posts) != 1 {
		t.Fatalf("a command past its deadline ran its handler %d times; posted %q, want the finish of the one in time only", n, posts)
	}
}
