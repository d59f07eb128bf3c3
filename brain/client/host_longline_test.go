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

// refusedFirstCommand serves a host that reads lines of at most maxLine
// bytes (0: the default) the commands of calls 4, whose input is first,
// and 5 on one connection. It checks that call 4 finished without its
// handler running, that call 5 ran, and that the one connection carried
// both; it answers call 4's outcome.
func refusedFirstCommand(t *testing.T, first string, maxLine int) api.Outcome {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	finished := make(chan api.HostResult, 4)
	srv, connections := fakeHostServer(t, []string{
		invokeFrame(4, deadline, "t", first),
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
	_, h := resumeFakeHost(t, srv.URL, maxLine)
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
	if o := outcomes[5]; o.Status != api.OutcomeOK {
		t.Fatalf("the call after the refused command finished %+v, want ok", o)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the refused command ran its handler %d times", n)
	}
	if n, err := connections.Load(), h.Err(); n != 1 || err != nil {
		t.Fatalf("%d commands connections, host error %v: want the one connection kept", n, err)
	}
	return outcomes[4]
}

// TestHostCommandLongerThanTheBound: a command whose line is longer than
// the host reads fails its call at once with invalid_input naming the
// bound, and the connection goes on carrying the commands after it.
// Brain sends a command once: a host that dropped the connection and
// connected again would never see the call (nor any command written
// after it), and Brain would record the calls the connection carried as
// of unknown outcome.
func TestHostCommandLongerThanTheBound(t *testing.T) {
	long := refusedFirstCommand(t, `{"q":"`+strings.Repeat("x", 4096)+`"}`, 1024)
	if long.Status != api.OutcomeFailed || long.Error == nil || long.Error.Code != "invalid_input" || !strings.Contains(long.Error.Message, "1024") {
		t.Fatalf("the call of the long command finished %+v (error %+v), want invalid_input naming the bound", long, long.Error)
	}
}

// TestHostCommandThatDoesNotDecode: a command whose data does not decode
// but whose start names its call (session, sequence, tool) fails that
// call at once with invalid_input, without running its handler, rather
// than leaving Brain waiting for it until its deadline; the connection
// goes on carrying the commands after it.
func TestHostCommandThatDoesNotDecode(t *testing.T) {
	bad := refusedFirstCommand(t, `{"q":tru}`, 0)
	if bad.Status != api.OutcomeFailed || bad.Error == nil || bad.Error.Code != "invalid_input" || !strings.Contains(bad.Error.Message, "decode") {
		t.Fatalf("the call of the command that does not decode finished %+v (error %+v), want invalid_input saying so", bad, bad.Error)
	}
}
