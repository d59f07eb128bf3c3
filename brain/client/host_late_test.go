package client

import (
	"context"
	"io"
	"net/http"
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
	var (
		mu    sync.Mutex
		posts []string
	)
	onTime := make(chan struct{}, 1)
	// The late command, then one in time, on the same stream.
	srv, _ := fakeHostServer(t, []string{
		invokeFrame(4, time.Now().Add(-time.Second), "send_mail", "{}"),
		invokeFrame(5, time.Now().Add(time.Minute), "send_mail", "{}"),
	}, func(w http.ResponseWriter, r *http.Request) {
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
	})
	_, h := resumeFakeHost(t, srv.URL, 0)
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
	awaitCallOver(t, h, 4, 10*time.Second, "the late command's call never ended")
	mu.Lock()
	defer mu.Unlock()
	if n := late.Load(); n != 0 || len(posts) != 1 {
		t.Fatalf("a command past its deadline ran its handler %d times; posted %q, want the finish of the one in time only", n, posts)
	}
}
