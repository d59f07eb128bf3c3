package pgstore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestLeaseLostMidTurn takes a session's lease away from the node running
// its turn while the turn's tool call is in flight (another node took it
// over): the node stops the turn at once and answers the synchronous send
// 503 overloaded (retryable), not a failure of the turn, and commits
// nothing more for it. Once the other node's lease has lapsed, the same
// key answers that its outcome was never recorded, the next message finds
// the turn recovered as after a crash (interrupted, its tool call
// ambiguous), and the execute is never resent.
func TestLeaseLostMidTurn(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a := clusterNode(t, dbURL, keyFile, 1)
	p := newHangProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := toolSession(t, ctx, a, p)
	hc := &http.Client{Timeout: 30 * time.Second}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	first := make(chan answer, 1)
	go func() {
		status, body, err := sendRaw(ctx, hc, a.url, s.ID, "k1", waitTurn())
		first <- answer{status, body, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Received(envapi.RequestExecute, "box")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tool's execute never reached the provider")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var before int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_records WHERE session_id = $1::bytea`, &before, []byte(s.ID))
	// Another node takes the lease over for two seconds.
	sqlExec(t, dbURL, `UPDATE brain_leases SET node_id = 'thief', epoch = epoch + 1, expires_at = now() + interval '2 seconds'`)
	sqlExec(t, dbURL, `UPDATE brain_sessions SET epoch = epoch + 1`)
	var got answer
	select {
	case got = <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the send was not answered within 10 s of losing the lease")
	}
	var e api.ApiError
	if got.err != nil || got.status != http.StatusServiceUnavailable || json.Unmarshal(got.body, &e) != nil ||
		e.Code != api.CodeOverloaded || !e.Retryable {
		t.Fatalf("send whose lease was lost mid-turn = %d %s, %v; want 503 overloaded, retryable", got.status, got.body, got.err)
	}
	var after int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_records WHERE session_id = $1::bytea`, &after, []byte(s.ID))
	if after != before {
		t.Fatalf("the node committed %d records for the session after losing its lease", after-before)
	}
	// After the thief's lease lapsed, the same key recovers the turn.
	var status int
	var body []byte
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		status, body, err = sendRaw(ctx, hc, a.url, s.ID, "k1", waitTurn())
		if err == nil && status != http.StatusServiceUnavailable && status != http.StatusConflict {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry of k1 = %d %s, %v", status, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if json.Unmarshal(body, &e) != nil || (e.Code != api.CodeAmbiguous && e.Code != api.CodeInterrupted) {
		t.Fatalf("retry of k1 after recovery = %d %s; want ambiguous or interrupted", status, body)
	}
	// The next write (a new key) recovers the session as after a crash.
	if status, body, err := sendRaw(ctx, hc, a.url, s.ID, "k2", "after"); err != nil || status != http.StatusOK {
		t.Fatalf("message after recovery = %d %s, %v", status, body, err)
	}
	evs := allEvents(t, ctx, a, s.ID)
	var interrupted, toolUnknown bool
	for _, ev := range evs {
		switch ev.EventType {
		case api.KindTurnFailed:
			interrupted = strings.Contains(string(ev.Data), api.FailureInterrupted)
		case api.KindToolCallFailed, api.KindToolCallEnded:
			toolUnknown = strings.Contains(string(ev.Data), "ambiguous") || strings.Contains(string(ev.Data), "unknown")
		}
	}
	if !interrupted || !toolUnknown {
		t.Errorf("after recovery: turn interrupted %v, tool call ambiguous %v:\n%s", interrupted, toolUnknown, kindsOf(evs))
	}
	if n := len(p.Received(envapi.RequestExecute, "box")); n != 1 {
		t.Errorf("the provider got %d executes, want 1 (never resent)", n)
	}
}
