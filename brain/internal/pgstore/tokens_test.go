package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// postToken posts body to path on n with the bearer token and answers the
// status and the error code of a non-2xx answer.
func postToken(t *testing.T, n *node, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, n.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.ApiError
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Code
}

func pathOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// TestTokensAcrossFailover runs a tool call on node A of three: its
// invocation token works on A and, authenticated there and forwarded to
// A, on B and C; the binding's reporter token works on every node. After
// A is killed and B took the session over, the invocation token is
// refused with 401 unauthorized by B and C (its execution was
// interrupted), while the reporter token still verifies on both.
func TestTokensAcrossFailover(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 2
	a, b, c := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	var reporter *envapi.Grant
	for _, op := range p.Received("", "box") {
		if op.Cmd.Operation.Reporter != nil {
			reporter = op.Cmd.Operation.Reporter
		}
	}
	if reporter == nil {
		t.Fatal("no operation carried a reporter grant")
	}
	if _, err := s.Submit(ctx, api.UserInput{Message: waitTurn()}); err != nil {
		t.Fatal(err)
	}
	x := p.WaitFor(envapi.RequestExecute, "box", 1)
	if len(x) == 0 || x[0].Cmd.Operation.Request.Callback == nil {
		t.Fatal("the tool's execute carried no callback")
	}
	cb := x[0].Cmd.Operation.Request.Callback
	callPath, repPath := pathOf(t, cb.URL), pathOf(t, reporter.URL)
	emit := `{"method":"emit","input":{"event_type":"probe","data":{}}}`
	report := `{"type":"event","event_type":"probe","data":{}}`
	for name, n := range map[string]*node{"A": a, "B": b, "C": c} {
		if st, code := postToken(t, n, callPath, cb.Token, emit); st != http.StatusOK {
			t.Errorf("emit with the live invocation token on %s = %d %s, want 200", name, st, code)
		}
		if st, code := postToken(t, n, repPath, reporter.Token, report); st != http.StatusOK {
			t.Errorf("report on %s = %d %s, want 200", name, st, code)
		}
		if st, _ := postToken(t, n, callPath, "x"+cb.Token[1:], emit); st != http.StatusUnauthorized {
			t.Errorf("emit with a damaged token on %s = %d, want 401", name, st)
		}
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	killed := time.Now()
	for {
		_, err := b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "after"})
		if err == nil {
			break
		}
		if time.Since(killed) > (lease+5)*time.Second {
			t.Fatalf("B did not take the session over: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name, n := range map[string]*node{"B": b, "C": c} {
		if st, code := postToken(t, n, callPath, cb.Token, emit); st != http.StatusUnauthorized || code != api.CodeUnauthorized {
			t.Errorf("emit with the token of the interrupted execution on %s = %d %s, want 401 unauthorized", name, st, code)
		}
		if st, code := postToken(t, n, repPath, reporter.Token, report); st != http.StatusOK {
			t.Errorf("report on %s after the failover = %d %s, want 200", name, st, code)
		}
	}
}

// TestInvocationTokenRefusedByOldOwner: the owner of a session stalls
// past its lease (here: the lease is expired in the database while the
// owner still runs a tool call) and node B takes the session over. Once
// the old owner noticed (its tool call was stopped), the invocation token
// it minted is refused with 401 unauthorized by it as well as by B.
func TestInvocationTokenRefusedByOldOwner(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	const lease = 3
	a, b := clusterNode(t, dbURL, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	if _, err := s.Submit(ctx, api.UserInput{Message: waitTurn()}); err != nil {
		t.Fatal(err)
	}
	x := p.WaitFor(envapi.RequestExecute, "box", 1)
	if len(x) == 0 || x[0].Cmd.Operation.Request.Callback == nil {
		t.Fatal("the tool's execute carried no callback")
	}
	cb := x[0].Cmd.Operation.Request.Callback
	callPath := pathOf(t, cb.URL)
	emit := `{"method":"emit","input":{"event_type":"probe","data":{}}}`
	if st, code := postToken(t, a, callPath, cb.Token, emit); st != http.StatusOK {
		t.Fatalf("emit on the owner = %d %s, want 200", st, code)
	}
	sqlExec(t, dbURL, `UPDATE brain_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, []byte(s.ID))
	if _, err := b.client(t).Sessions.Open(s.ID).Send(ctx, api.UserInput{Message: "after"}); err != nil {
		t.Fatalf("message to B once A's lease expired = %v", err)
	}
	for deadline := time.Now().Add(lease * time.Second); p.stopped.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the old owner did not stop its tool call after losing the lease")
		}
	}
	for name, n := range map[string]*node{"the old owner": a, "the new owner": b} {
		if st, code := postToken(t, n, callPath, cb.Token, emit); st != http.StatusUnauthorized || code != api.CodeUnauthorized {
			t.Errorf("emit with the token minted before the takeover on %s = %d %s, want 401 unauthorized", name, st, code)
		}
	}
}
