package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestHostCommandThatDoesNotDecode: a command whose data does not decode
// but whose start names its call (session, sequence, tool) fails that
// call at once with invalid_input, without running its handler, rather
// than leaving Brain waiting for it until its deadline; the connection
// goes on carrying the commands after it.
func TestHostCommandThatDoesNotDecode(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	finished := make(chan api.HostResult, 4)
	srv, connections := fakeHostServer(t, []string{
		invokeFrame(4, deadline, "t", `{"q":tru}`),
		invokeFrame(5, deadline, "t", `{"q":"y"}`),
	}, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var in api.HostResult
		if err := json.Unmarshal(b, &in); err == nil && in.Update.Type == api.UpdateFinish {
			finished <- in
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sequence":9}`))
	})
	_, h := resumeFakeHost(t, srv.URL, 0)
	var ran atomic.Int32
	h.Handle("t", func(_ context.Context, call *ToolCall) (api.Outcome, error) {
		if call.Sequence == 4 {
			ran.Add(1)
		}
		return OK("done"), nil
	})
	outcomes := map[uint64]api.Outcome{}
	for len(outcomes) < 2 {
		select {
		case in := <-finished:
			if in.Update.Outcome == nil {
				t.Fatalf("call %d finished without an outcome", in.Sequence)
			}
			outcomes[in.Sequence] = *in.Update.Outcome
		case <-time.After(10 * time.Second):
			t.Fatalf("finished %v after %d commands connections (host error %v), want calls 4 and 5 finished on one", outcomes, connections.Load(), h.Err())
		}
	}
	bad := outcomes[4]
	if bad.Status != api.OutcomeFailed || bad.Error == nil || bad.Error.Code != "invalid_input" || !strings.Contains(bad.Error.Message, "decode") {
		t.Fatalf("the call of the command that does not decode finished %+v (error %+v), want invalid_input saying so", bad, bad.Error)
	}
	if o := outcomes[5]; o.Status != api.OutcomeOK {
		t.Fatalf("the call after it finished %+v, want ok", o)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the command that does not decode ran its handler %d times", n)
	}
	if n, err := connections.Load(), h.Err(); n != 1 || err != nil {
		t.Fatalf("%d commands connections, host error %v: want the one connection kept", n, err)
	}
}
