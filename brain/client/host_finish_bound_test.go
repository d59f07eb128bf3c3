package client

import (
	"context"
	"io"
	"net/http"
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
	srv, _ := fakeHostServer(t, []string{invokeFrame(4, deadline, "t", "{}")}, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // no answer, ever
		select {
		case abandoned <- time.Now():
		default:
		}
	})
	_, h := resumeFakeHost(t, srv.URL, 0)
	h.Handle("t", func(context.Context, *ToolCall) (api.Outcome, error) { return OK("done"), nil })
	select {
	case at := <-abandoned:
		if at.Before(deadline.Add(-100 * time.Millisecond)) {
			t.Fatalf("the finish was given up %v before the call's deadline", deadline.Sub(at))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unanswered finish was still under way 8 s after the call's deadline")
	}
	awaitCallOver(t, h, 4, 5*time.Second, "the call whose finish was given up is still running")
}
