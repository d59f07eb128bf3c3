package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// answerAs records every outcome as status 200 with the value as body.
func answerAs(v any, err error) (int, []byte, bool) {
	if err != nil {
		return 0, nil, false
	}
	return 200, []byte(fmt.Sprint(v)), true
}

// requestRow answers the key's row: whether there is one, and its answer
// status (0: none).
func requestRow(t *testing.T, url, key string) (bool, int) {
	t.Helper()
	var status int
	sqlScan(t, url, `SELECT coalesce((SELECT coalesce(status, 0) FROM brain_requests WHERE scope = 'send_message' AND key = $1), -1)`,
		&status, []byte(key))
	return status >= 0, max(status, 0)
}

// fencedNode opens a fenced node with the lease of session s.
func fencedNode(t *testing.T, url, id string, sessions ...string) *pgstore.DB {
	t.Helper()
	db := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.NodeID, o.LeaseDuration = true, id, 30*time.Second })
	for _, s := range sessions {
		if _, err := db.AcquireLease(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if err := db.Journal().Append(context.Background(), s, 1, []journal.Record{rec("session_created", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestClaimRidesTheAppend: a riding claim writes nothing until the append
// carrying its record commits, and is then durable; its answer is
// written by the append carrying the answer record, and replayed byte for
// byte by another node; the journal holds both records, privately.
func TestClaimRidesTheAppend(t *testing.T) {
	url := pgtest.Database(t)
	a := fencedNode(t, url, "a", "s")
	b := openDB(t, url, nil)
	ctx := context.Background()
	d := idem.Digest([]byte("send"))
	var durable atomic.Int32
	c, replay, err := a.Requests(nil).ClaimRiding(ctx, "send_message", "k", d, answerAs, func() { durable.Add(1) })
	if err != nil || replay != nil || c == nil {
		t.Fatalf("ClaimRiding = %v, %v, %v", c, replay, err)
	}
	if ok, _ := requestRow(t, url, "k"); ok || c.Durable() {
		t.Fatalf("a riding claim wrote its row (%v) or is durable (%v) before any append", ok, c.Durable())
	}
	start := []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: c.Ride().Claim}, rec("model_call_started", 4)}
	if err := a.Journal().Append(ctx, "s", 2, start); err != nil {
		t.Fatal(err)
	}
	if ok, status := requestRow(t, url, "k"); !ok || status != 0 || !c.Durable() || durable.Load() != 1 {
		t.Fatalf("after the first append: row %v status %d, durable %v, onDurable ran %d times", ok, status, c.Durable(), durable.Load())
	}
	// Another node finds the claim running on a live node: it waits.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := b.Requests(nil).Claim(wctx, "send_message", "k", d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Claim elsewhere while the claim runs = %v, want to wait", err)
	}
	data := c.Ride().Answer(`{"last_sequence":7}`, nil)
	if _, ok := c.Recorded(); ok {
		t.Fatal("answer recorded before its append")
	}
	end := []journal.Record{rec("model_call_ended", 5), {Kind: commits.AnswerKind, Data: data}, rec("turn_ended", 7)}
	if err := a.Journal().Append(ctx, "s", 5, end); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Recorded()
	if !ok || got.Status != 200 || string(got.Body) != `{"last_sequence":7}` {
		t.Fatalf("Recorded = %+v, %v", got, ok)
	}
	if _, status := requestRow(t, url, "k"); status != 200 {
		t.Fatalf("answer row status %d, want 200", status)
	}
	if err := c.Answer(got.Status, got.Body); err != nil {
		t.Fatalf("Answer of a journaled answer = %v", err)
	}
	for _, r := range []*pgstore.Requests{b.Requests(nil), a.Requests(nil)} {
		_, ans, err := r.ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
		if err != nil || ans == nil || ans.Status != 200 || string(ans.Body) != `{"last_sequence":7}` {
			t.Fatalf("retry = %+v, %v; want the answer byte for byte", ans, err)
		}
	}
	recs, err := b.Journal().Read(ctx, "s", 0, 0, 0)
	if err != nil || len(recs) != 7 || recs[2].Kind != commits.ClaimKind || recs[5].Kind != commits.AnswerKind {
		t.Fatalf("journal = %d records, %v", len(recs), err)
	}
}

// TestRidingClaimFencedOut: when the append carrying the claim fails its
// fence (the lease was taken over), neither the claim nor the records
// commit, the claim releases without a write and the key runs anew on
// another node; when the append carrying the answer is fenced out, the
// claim stays unanswered: ambiguous once its node is gone.
func TestRidingClaimFencedOut(t *testing.T) {
	url := pgtest.Database(t)
	a := fencedNode(t, url, "a", "s", "s2")
	ctx := context.Background()
	d := idem.Digest([]byte("send"))
	takeover := func(b *pgstore.DB, s string) {
		t.Helper()
		sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1", []byte(s))
		if _, err := b.AcquireLease(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	b := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.NodeID, o.LeaseDuration = true, "b", 30*time.Second })
	c, _, err := a.Requests(nil).ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
	if err != nil {
		t.Fatal(err)
	}
	takeover(b, "s")
	err = a.Journal().Append(ctx, "s", 2, []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: c.Ride().Claim}})
	if !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("fenced append = %v, want ErrNotOwner", err)
	}
	if ok, _ := requestRow(t, url, "k"); ok || c.Durable() {
		t.Fatalf("a fenced append left the claim row (%v) or a durable claim (%v)", ok, c.Durable())
	}
	if next, _ := b.Journal().Next(ctx, "s"); next != 2 {
		t.Fatalf("next = %d after a fenced append, want 2", next)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	c2, ans, err := b.Requests(nil).ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
	if err != nil || ans != nil || c2 == nil {
		t.Fatalf("the key after a fenced claim = %v, %+v, %v; want it free", c2, ans, err)
	}
	if err := b.Journal().Append(ctx, "s", 2, []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: c2.Ride().Claim}}); err != nil {
		t.Fatal(err)
	}
	// The answer's append fenced out: the claim stays without an answer.
	c3, _, err := a.Requests(nil).ClaimRiding(ctx, "send_message", "k3", d, answerAs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, "s2", 2, []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: c3.Ride().Claim}}); err != nil {
		t.Fatal(err)
	}
	takeover(b, "s2")
	data := c3.Ride().Answer("done", nil)
	if err := a.Journal().Append(ctx, "s2", 4, []journal.Record{{Kind: commits.AnswerKind, Data: data}, rec("turn_ended", 5)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("fenced answer append = %v, want ErrNotOwner", err)
	}
	if _, ok := c3.Recorded(); ok {
		t.Fatal("a fenced answer was recorded")
	}
	if _, status := requestRow(t, url, "k3"); status != 0 {
		t.Fatalf("a fenced answer wrote status %d", status)
	}
	c3.Abandon()
	a.Close()
	if _, _, err := b.Requests(nil).ClaimRiding(ctx, "send_message", "k3", d, answerAs, nil); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("the claim left without its answer = %v, want ErrAmbiguous", err)
	}
}

// TestRidingClaimsRacingInOneBatch: of two nodes that both found a key
// free, the second append to carry its claim fails with nothing committed
// (its session does not move), while the other sessions' appends grouped
// with it commit, claims and answers included.
func TestRidingClaimsRacingInOneBatch(t *testing.T) {
	url := pgtest.Database(t)
	const n = 16
	var sessions []string
	for i := range n {
		sessions = append(sessions, fmt.Sprint("s", i))
	}
	a := fencedNode(t, url, "a", sessions...)
	b := fencedNode(t, url, "b", "x")
	ctx := context.Background()
	d := idem.Digest([]byte("send"))
	// b claims "k0" after a found it free.
	cs := make([]idem.RidingClaim, n)
	for i := range n {
		c, _, err := a.Requests(nil).ClaimRiding(ctx, "send_message", fmt.Sprint("k", i), d, answerAs, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	cb, _, err := b.Requests(nil).ClaimRiding(ctx, "send_message", "k0", d, answerAs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Append(ctx, "x", 2, []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: cb.Ride().Claim}}); err != nil {
		t.Fatal(err)
	}
	// Every session's first commit, claim and answer in one append, at
	// once, so that they are grouped.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			data := cs[i].Ride().Answer(i, nil)
			errs[i] = a.Journal().Append(ctx, sessions[i], 2, []journal.Record{
				rec("turn_started", 2), {Kind: commits.ClaimKind, Data: cs[i].Ride().Claim},
				{Kind: commits.AnswerKind, Data: data}, rec("turn_ended", 5)})
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], pgstore.ErrUnavailable) || errors.Is(errs[0], pgstore.ErrOutcomeUnknown) {
		t.Fatalf("append carrying a claim taken meanwhile = %v, want ErrUnavailable (nothing committed)", errs[0])
	}
	if next, _ := a.Journal().Next(ctx, sessions[0]); next != 2 || cs[0].Durable() {
		t.Fatalf("the refused append moved its session to %d (durable %v)", next, cs[0].Durable())
	}
	for i := 1; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("append %d = %v", i, errs[i])
		}
		got, ok := cs[i].Recorded()
		if !ok || string(got.Body) != fmt.Sprint(i) || !cs[i].Durable() {
			t.Fatalf("claim %d: recorded %+v %v, durable %v", i, got, ok, cs[i].Durable())
		}
		var body []byte
		sqlScan(t, url, `SELECT body FROM brain_requests WHERE key = $1`, &body, []byte(fmt.Sprint("k", i)))
		if string(body) != fmt.Sprint(i) {
			t.Fatalf("row of k%d answers %q", i, body)
		}
	}
}

// sendRaw posts one synchronous message with an idempotency key and
// answers the status and body (err: no answer).
func sendRaw(ctx context.Context, hc *http.Client, base, id, key, msg string) (int, []byte, error) {
	return postRaw(ctx, hc, base, id, key, msg, false)
}

// postRaw posts a message, asking for an async answer when async is set.
func postRaw(ctx context.Context, hc *http.Client, base, id, key, msg string, async bool) (int, []byte, error) {
	body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: msg}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+id+"/messages", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if async {
		req.Header.Set("Prefer", "respond-async")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestRidingClaimsAcrossNodeKill runs brain serve processes on one
// database: a synchronous send answered on node A is replayed byte for
// byte by node B, before and after A is killed; a send whose node is
// killed right after the turn's first commit (its model call hangs)
// leaves its key ambiguous on every node, a node started afterwards
// included, and never runs again.
func TestRidingClaimsAcrossNodeKill(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 1), clusterNode(t, dbURL, keyFile, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ttl := int64(0)
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	status, first, err := sendRaw(ctx, hc, a.url, s.ID, "r1", "hello")
	if err != nil || status != 200 {
		t.Fatalf("send on A = %d %s, %v", status, first, err)
	}
	if status, again, err := sendRaw(ctx, hc, b.url, s.ID, "r1", "hello"); err != nil || status != 200 || !bytes.Equal(again, first) {
		t.Fatalf("retry on B = %d %s, %v; want 200 %s", status, again, err, first)
	}
	// The second send's model call hangs after the turn's first commit.
	go sendRaw(ctx, &http.Client{}, a.url, s.ID, "r2", `{"delay_ms":600000,"reply":"late"}`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var started int
		sqlScan(t, dbURL, `SELECT count(*) FROM brain_records WHERE kind = 'model_call_started'::bytea`, &started)
		if started == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second turn's first commit did not happen")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, status := requestRow(t, dbURL, "r2"); !ok || status != 0 {
		t.Fatalf("after the first commit the claim row is there: %v, status %d; want an unanswered claim", ok, status)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	c := clusterNode(t, dbURL, keyFile, 1)
	for _, n := range []*node{b, c} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, body, err := sendRaw(ctx, hc, n.url, s.ID, "r2", `{"delay_ms":600000,"reply":"late"}`)
			if err == nil && status == 500 && strings.Contains(string(body), `"ambiguous"`) {
				break
			}
			if err == nil && status/100 != 5 {
				t.Fatalf("retry of the killed send on %s = %d %s; want 500 ambiguous", n.url, status, body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("retry of the killed send on %s = %d %s, %v; want 500 ambiguous", n.url, status, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if status, again, err := sendRaw(ctx, hc, n.url, s.ID, "r1", "hello"); err != nil || status != 200 || !bytes.Equal(again, first) {
			t.Fatalf("retry of the answered send on %s = %d %s, %v; want 200 %s", n.url, status, again, err, first)
		}
	}
	var turns int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_records WHERE kind = 'turn_started'::bytea`, &turns)
	if turns != 2 {
		t.Fatalf("%d turns started, want 2: a key ran again", turns)
	}
}

// TestAsyncRidingAcrossNodeKill: an async submission's claim and its 202
// ride the append of its turn_started, so the row is answered when the
// 202 is sent; another node replays that 202 byte for byte, before and
// after the submitting node is killed with the turn still running, and
// the turn never runs twice.
func TestAsyncRidingAcrossNodeKill(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	a, b := clusterNode(t, dbURL, keyFile, 1), clusterNode(t, dbURL, keyFile, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ttl := int64(0)
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	hang := `{"delay_ms":600000,"reply":"late"}`
	status, first, err := postRaw(ctx, hc, a.url, s.ID, "a1", hang, true)
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("async submission on A = %d %s, %v", status, first, err)
	}
	var answered int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_requests WHERE scope = 'send_message.async' AND key = $1 AND status = 202`, &answered, []byte("a1"))
	if answered != 1 {
		t.Fatal("after the 202 the claim row is not answered 202")
	}
	if status, again, err := postRaw(ctx, hc, b.url, s.ID, "a1", hang, true); err != nil || status != http.StatusAccepted || !bytes.Equal(again, first) {
		t.Fatalf("retry on B = %d %s, %v; want 202 %s", status, again, err, first)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
	c := clusterNode(t, dbURL, keyFile, 1)
	for _, n := range []*node{b, c} {
		// 503 while the dead node's lease (1 s) runs out, as writes to
		// a session are served by its owner.
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, again, err := postRaw(ctx, hc, n.url, s.ID, "a1", hang, true)
			if err == nil && status == http.StatusAccepted && bytes.Equal(again, first) {
				break
			}
			if (err == nil && status != http.StatusServiceUnavailable) || time.Now().After(deadline) {
				t.Fatalf("retry on %s after the kill = %d %s, %v; want 202 %s", n.url, status, again, err, first)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var turns int
	sqlScan(t, dbURL, `SELECT count(*) FROM brain_records WHERE kind = 'turn_started'::bytea`, &turns)
	if turns != 1 {
		t.Fatalf("%d turns started, want 1: the key ran again", turns)
	}
}

// TestRidingClaimLeaseLostOverHTTP: a synchronous send whose turn's first
// commit is fenced out (another node took the session's lease) answers
// 503 with nothing durable, neither its turn nor its claim, and the same
// key runs once the lease can be taken again.
func TestRidingClaimLeaseLostOverHTTP(t *testing.T) {
	url := pgtest.Database(t)
	keyFile := sealingKey(t)
	n := startNode(t, url, keyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ttl := int64(0)
	s, err := n.Client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if status, body, err := sendRaw(ctx, hc, n.URL, s.ID, "k0", "hello"); err != nil || status != 200 {
		t.Fatalf("first send = %d %s, %v", status, body, err)
	}
	// Another node takes the lease over while this one still holds it
	// locally.
	sqlExec(t, url, `UPDATE brain_leases SET node_id = 'thief', epoch = epoch + 1, expires_at = now() + interval '1 hour'`)
	sqlExec(t, url, `UPDATE brain_sessions SET epoch = epoch + 1`)
	status, body, err := sendRaw(ctx, hc, n.URL, s.ID, "k1", "again")
	if err != nil || status != 503 {
		t.Fatalf("send under a lost lease = %d %s, %v; want 503", status, body, err)
	}
	if ok, _ := requestRow(t, url, "k1"); ok {
		t.Fatal("a fenced send left its claim row")
	}
	var turns int
	sqlScan(t, url, `SELECT count(*) FROM brain_records WHERE kind = 'turn_started'::bytea`, &turns)
	if turns != 1 {
		t.Fatalf("%d turns started, want 1: the fenced turn committed", turns)
	}
	// The thief's lease lapses: the key is usable and runs once.
	sqlExec(t, url, `UPDATE brain_leases SET expires_at = now() - interval '1 second'`)
	deadline := time.Now().Add(40 * time.Second)
	for {
		status, body, err = sendRaw(ctx, hc, n.URL, s.ID, "k1", "again")
		if err == nil && status == 200 {
			break
		}
		if (err == nil && status != 503) || time.Now().After(deadline) {
			t.Fatalf("retry of the fenced send = %d %s, %v; want 200", status, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sqlScan(t, url, `SELECT count(*) FROM brain_records WHERE kind = 'turn_started'::bytea`, &turns)
	if ok, status := requestRow(t, url, "k1"); !ok || status != 200 || turns != 2 {
		t.Fatalf("after the retry: row %v status %d, %d turns; want answered 200 and 2 turns", ok, status, turns)
	}
}
