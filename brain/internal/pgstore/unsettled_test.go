package pgstore_test

import (
	"bytes"
	"context"
	be "encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// A claim this process no longer runs, and whose end it could not commit,
// must not be awaited by other nodes for as long as this process lives:
// a retry on another node (the session's owner after an outage) would
// wait on it until its client gave up, every time.

// longLease keeps a node a live member through a test: a node whose
// membership lapsed has its unanswered claims answered ambiguous anyway.
func longLease(o *pgstore.Options) { o.LeaseDuration = time.Minute }

// claimWithin claims k on r with a deadline and answers what Claim
// answered, how long it took, and Claim's error.
func claimWithin(r *pgstore.Requests, k string, d time.Duration) (idem.Claimed, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	c, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
	return c, time.Since(start), err
}

// claimRetrying is claimWithin retried, as a client retries, while Claim
// answers 503 overloaded (a connection of the pool that died with the
// server fails its first use).
func claimRetrying(r *pgstore.Requests, k string, d time.Duration) (idem.Claimed, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for {
		c, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
		if !errors.Is(err, journal.ErrOverloaded) || ctx.Err() != nil {
			return c, time.Since(start), err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAbandonedClaimIsAmbiguousOnEveryNode: a claim abandoned on a live
// node answers ErrAmbiguous on another node at once, not after waiting
// for the first node to end.
func TestAbandonedClaimIsAmbiguousOnEveryNode(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, longLease).Requests(nil), openDB(t, url, longLease).Requests(nil)
	c, _, err := claimWithin(a, "k", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Abandon()
	if _, took, err := claimWithin(b, "k", 10*time.Second); !errors.Is(err, idem.ErrAmbiguous) || took > 5*time.Second {
		t.Fatalf("Claim on another node after an abandon = %v after %v, want ErrAmbiguous at once", err, took)
	}
	if _, _, err := claimWithin(a, "k", 10*time.Second); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("Claim on the abandoning node = %v, want ErrAmbiguous", err)
	}
}

// TestClaimEndsCommittedAfterOutage: an answer and a release that failed
// because the database was down are settled once it is back: the
// answered-but-unrecorded key is ambiguous on every node, the released
// key runs again on any node. While the database is down, a claim of the
// released key answers 503 at once.
func TestClaimEndsCommittedAfterOutage(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	// Both nodes stay live members through the outage.
	a, b := openDB(t, url, longLease).Requests(nil), openDB(t, url, longLease).Requests(nil)
	ran, _, err := claimWithin(a, "ran", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	notRun, _, err := claimWithin(a, "not-run", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := ran.Answer(200, []byte("{}")); !errors.Is(err, journal.ErrOverloaded) {
		t.Fatalf("Answer with the database down = %v, want 503 overloaded", err)
	}
	if err := notRun.Release(); !errors.Is(err, journal.ErrOverloaded) {
		t.Fatalf("Release with the database down = %v, want 503 overloaded", err)
	}
	if _, took, err := claimWithin(a, "not-run", 10*time.Second); !errors.Is(err, journal.ErrOverloaded) || took > 7*time.Second {
		t.Fatalf("Claim with the database down = %v after %v, want 503 overloaded", err, took)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if _, took, err := claimRetrying(b, "ran", 15*time.Second); !errors.Is(err, idem.ErrAmbiguous) || took > 10*time.Second {
		t.Fatalf("Claim on another node of a key whose answer was lost = %v after %v, want ErrAmbiguous", err, took)
	}
	c, took, err := claimRetrying(b, "not-run", 15*time.Second)
	if err != nil || took > 10*time.Second {
		t.Fatalf("Claim on another node of a key whose release was lost = %v after %v, want a claim", err, took)
	}
	c.Answer(200, nil)
	if _, _, err := claimRetrying(a, "ran", 10*time.Second); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("Claim on the first node of a key whose answer was lost = %v, want ErrAmbiguous", err)
	}
}

// TestLostClaimCommitIsReleased: the connection carrying a claim is cut
// right after the claim committed, before its answer reached the node.
// The claim fails with ErrOutcomeUnknown (503); its request did not run,
// so a retry runs it, on another node at once (it does not wait on the
// claim) as on the same one.
func TestLostClaimCommitIsReleased(t *testing.T) {
	dbURL := pgtest.Database(t)
	p := newCutProxy(t, dbURL)
	a := openDB(t, p.url, longLease).Requests(nil)
	b := openDB(t, dbURL, nil).Requests(nil)
	p.arm()
	_, _, err := claimWithin(a, "k", 10*time.Second)
	if !p.cut.Load() {
		t.Fatalf("the proxy did not cut a committed claim (Claim = %v)", err)
	}
	if !errors.Is(err, pgstore.ErrOutcomeUnknown) || !errors.Is(err, journal.ErrOverloaded) {
		t.Fatalf("Claim whose commit was lost = %v, want ErrOutcomeUnknown (503 overloaded)", err)
	}
	c, took, err := claimWithin(b, "k", 10*time.Second)
	if err != nil || took > 5*time.Second {
		t.Fatalf("Claim on another node = %v after %v, want a claim at once", err, took)
	}
	if err := c.Answer(200, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if _, ans, err := a.Claim(context.Background(), "s", "k", idem.Digest([]byte("k"))); err != nil || ans == nil || string(ans.Body) != "ok" {
		t.Fatalf("Claim on the first node = %+v, %v, want the answer", ans, err)
	}
}

// TestMessageRetryAfterLostClaimCommit runs two brain serve processes,
// A reaching PostgreSQL through a proxy. A message sent to A, the
// session's owner, loses the reply of the append that carries its turn's
// start and its idempotency claim (the append committed): it answers 503
// overloaded. PostgreSQL is then stopped past the lease (pg_ctl stop -m
// immediate) and started again, so the session moves to B while A lives
// on. The same key retried on B is answered at once, ambiguous (the turn
// may have begun, so it is never run again), and not after B waited on
// A's claim until its client gave up; the turn ran once, closed as
// interrupted.
func TestMessageRetryAfterLostClaimCommit(t *testing.T) {
	dbURL, keyFile := pgtest.Database(t), sealingKey(t)
	srv := pgtest.Control(t)
	p := newCutProxy(t, dbURL)
	const lease = 2
	a, b := clusterNode(t, p.url, keyFile, lease), clusterNode(t, dbURL, keyFile, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ttl := int64(0)
	s, err := a.client(t).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 20 * time.Second}
	if status, code, err := postMessage(ctx, hc, a.url, s.ID, "first", "first"); status != http.StatusOK {
		t.Fatalf("first message = %d %q %v", status, code, err)
	}
	p.armAppend()
	status, code, err := postMessage(ctx, hc, a.url, s.ID, "k", "k")
	if !p.cut.Load() {
		t.Fatalf("the proxy cut no append (message = %d %q %v)", status, code, err)
	}
	if status != http.StatusServiceUnavailable || code != api.CodeOverloaded {
		t.Fatalf("message whose claim's commit reply was lost = %d %q %v, want 503 overloaded", status, code, err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep((lease + 1) * time.Second) // past A's lease
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// Both nodes are live members again before the retry, so that the
	// claim's instance is live.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var live int
		sqlScan(t, dbURL, `SELECT count(*) FROM brain_nodes WHERE expires_at > now()`, &live)
		if live == 2 && readyOf(hc, a) == http.StatusNoContent && readyOf(hc, b) == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the nodes did not come back after the restart")
		}
	}
	start := time.Now()
	for {
		// Retried while 503 overloaded, as clients do: a pooled
		// connection that died with the server fails its first use.
		status, code, err = postMessage(ctx, hc, b.url, s.ID, "k", "k")
		if code != api.CodeOverloaded || time.Since(start) > 10*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(start); status != http.StatusInternalServerError || code != api.CodeAmbiguous || took > 10*time.Second {
		t.Fatalf("retry of the key on B = %d %q %v after %v, want 500 ambiguous at once", status, code, err, took)
	}
	var owner string
	sqlScan(t, dbURL, `SELECT n.public_url FROM brain_leases l JOIN brain_nodes n USING (node_id) WHERE l.session_id = $1`, &owner, []byte(s.ID))
	if owner != b.url {
		t.Errorf("the session's lease is held by %s, want B (%s): the retry did not move the session", owner, b.url)
	}
	// The next message recovers the session on B: k's turn closes as
	// interrupted, and the new one runs.
	if status, code, err := postMessage(ctx, hc, b.url, s.ID, "after", "after"); status != http.StatusOK {
		t.Fatalf("next message on B = %d %q %v", status, code, err)
	}
	started, failed := 0, 0
	for e, err := range b.client(t).Sessions.Open(s.ID).Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.EventType {
		case api.KindTurnStarted:
			started++
		case api.KindTurnFailed:
			failed++
		}
	}
	if started != 3 || failed != 1 {
		t.Errorf("turns started %d, failed %d; want 3 started (first, k, after) and k failed as interrupted", started, failed)
	}
}

// cutProxy forwards TCP connections to the test server's Unix socket.
// Once armed, it cuts the connection that carries the next INSERT
// returning one row (an idempotency claim) after the server committed it
// (at its ReadyForQuery), without passing the INSERT's answer on. Armed
// with armAppend, it cuts instead the next statement answering rows of
// rideColumns columns: the group commit's append that carries an
// idempotency claim riding it.
type cutProxy struct {
	url      string
	armed    atomic.Bool
	byAppend atomic.Bool
	cut      atomic.Bool
}

// rideColumns is the width of the rows of the append statement that
// carries claims or answers (combinedSQL with rides).
const rideColumns = 6

func newCutProxy(t *testing.T, dbURL string) *cutProxy {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	p := &cutProxy{url: "postgres://postgres@" + ln.Addr().String() + u.Path + "?sslmode=disable"}
	wg.Go(func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("unix", socket)
			if err != nil {
				cc.Close()
				continue
			}
			wg.Go(func() {
				io.Copy(sc, cc)
				sc.Close()
			})
			wg.Go(func() {
				p.relay(cc, sc)
				cc.Close()
				sc.Close()
			})
		}
	})
	return p
}

func (p *cutProxy) arm() { p.byAppend.Store(false); p.armed.Store(true) }

func (p *cutProxy) armAppend() { p.byAppend.Store(true); p.armed.Store(true) }

// relay passes the server's messages to the client, message by message.
func (p *cutProxy) relay(client, server net.Conn) {
	head := make([]byte, 5)
	doomed, row := false, false
	for {
		if _, err := io.ReadFull(server, head); err != nil {
			return
		}
		n := int(be.BigEndian.Uint32(head[1:])) - 4
		if n < 0 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(server, body); err != nil {
			return
		}
		switch {
		case head[0] == 'D':
			row = true
			if p.byAppend.Load() && len(body) >= 2 && be.BigEndian.Uint16(body) == rideColumns && p.armed.CompareAndSwap(true, false) {
				doomed = true
			}
		case head[0] == 'C' && row && !p.byAppend.Load() && bytes.HasPrefix(body, []byte("INSERT 0 1\x00")) && p.armed.CompareAndSwap(true, false):
			doomed = true
		case head[0] == 'Z' && doomed:
			p.cut.Store(true)
			return
		case head[0] == 'Z':
			row = false
		}
		if doomed {
			continue
		}
		if _, err := client.Write(append(head[:5:5], body...)); err != nil {
			return
		}
	}
}
