package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// stallBatch sends, on a connection of db, the first statements of a
// pipelined batch (the session row of session locked, claims of keys
// inserted) and never the rest: a node stopped (SIGSTOP, a hung host)
// while it sent its group commit. The server keeps the batch's
// transaction open, waiting for the rest, for as long as the connection
// lasts; idle_in_transaction_session_timeout does not apply to it. The
// connection answers how the batch ends when the node resumes.
func stallBatch(t *testing.T, db *DB, session string, keys ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.Hijack()
	t.Cleanup(func() { conn.Close(ctx) })
	p := conn.PgConn().StartPipeline(ctx)
	p.SendQueryParams(`UPDATE brain_sessions SET last_ms = last_ms WHERE session_id = $1`,
		[][]byte{[]byte(session)}, []uint32{pgtype.ByteaOID}, []int16{1}, nil)
	for _, k := range keys {
		p.SendQueryParams(`INSERT INTO brain_requests (scope, key, digest, hinted, claim_id, instance, claimed_at, at)
			VALUES ('s', $1, '\x00', false, '\x01', $2, now(), now())`,
			[][]byte{[]byte(k), []byte(db.instance)}, []uint32{pgtype.ByteaOID, pgtype.TextOID}, []int16{1, 0}, nil)
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	// Every statement sent ran once the server waits for more.
	for {
		var waiting bool
		err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE pid = $1 AND state = 'active' AND wait_event = 'ClientRead')`, conn.PgConn().PID()).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return conn
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockWaits counts the statements waiting for a lock.
func lockWaits(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNodeStoppedMidBatchDoesNotHoldOthers: a node stopped in the middle
// of sending a group commit holds the row locks its first statements
// took, in a transaction the server keeps open while it waits for the
// rest. Another node's claims of the keys it holds fail soon as
// unavailable (nothing committed, 503 retryable) rather than taking the
// group commit's places until their timeout, so that node's other writes
// commit meanwhile; once the stopped node's lease ran out, its session
// is taken over and appended to. When the stopped node resumes, its batch
// commits nothing.
func TestNodeStoppedMidBatchDoesNotHoldOthers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	const op = 2 * time.Second
	const sessions = 8
	a, b, s := stoppedAndBusy(t, url, op, time.Second, sessions)
	stalled := stallBatch(t, a, s, "k1", "k2")

	// Claims of the held keys on b, one after the other, each waiting
	// for its lock (or already answered) before the next.
	r := b.Requests(nil)
	var wg sync.WaitGroup
	for i, k := range []string{"k1", "k2"} {
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			start := time.Now()
			_, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
			took := time.Since(start)
			if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("claim of %s, held by the stopped node = %v, want ErrUnavailable (nothing committed)", k, err)
			}
			if took >= op {
				t.Errorf("claim of %s, held by the stopped node, took %v: not under the operation timeout %v", k, took, op)
			}
		})
		for lockWaits(t, url) <= i && !closed(done) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// b's other writes commit meanwhile, well within their timeout.
	for i := range sessions {
		wg.Go(func() {
			start := time.Now()
			err := b.Journal().Append(ctx, fmt.Sprint("b", i), 2, oneRecord())
			if took := time.Since(start); err != nil || took >= op/2 {
				t.Errorf("append to b%d while the stopped node holds other rows = %v after %v, want it committed within %v", i, err, took, op/2)
			}
		})
	}
	wg.Wait()

	// Once a's lease ran out, b takes the session over and appends.
	deadline := time.Now().Add(time.Second + 5*op)
	for {
		_, err := b.AcquireLease(ctx, s)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of the node stopped mid-batch was not taken over: %v", err)
		}
		time.Sleep(op / 10)
	}
	if err := b.Journal().Append(ctx, s, 2, oneRecord()); err != nil {
		t.Fatalf("append by the new owner = %v", err)
	}
	// a resumes: its batch commits nothing.
	p := stalled.PgConn().StartPipeline(ctx)
	p.SendPipelineSync()
	err := p.Flush()
	if err == nil {
		_, err = p.GetResults()
	}
	if err == nil {
		t.Error("the stopped node's batch went on after it resumed")
	}
	var n int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM brain_requests`).Scan(&n); err != nil || n != 0 {
		t.Errorf("claim rows after the stopped node's batch = %d, %v; want none", n, err)
	}
	if next, err := b.Journal().Next(ctx, s); err != nil || next != 3 {
		t.Fatalf("Next = %d, %v; want 3: the new owner's records are there", next, err)
	}
}

// stoppedAndBusy opens nodes on url with operations bounded by op and
// leases of lease: "a", which renews no lease (it is to be stopped),
// holding session s with one record, and "b" holding sessions b0 to
// b<n-1>, each with one record.
func stoppedAndBusy(t *testing.T, url string, op, lease time.Duration, n int) (a, b *DB, s string) {
	t.Helper()
	ctx := context.Background()
	open := func(node string, keep bool) *DB {
		db, err := Open(ctx, Options{URL: url, SealingKey: []byte("0123456789abcdef0123456789abcdef"), NodeID: node,
			LeaseDuration: lease, OpTimeout: op, Fenced: true, KeepLeases: keep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b = open("a", false), open("b", true)
	s = "stopped-mid-batch"
	if _, err := a.AcquireLease(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, s, 1, oneRecord()); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprint("b", i)
		if _, err := b.AcquireLease(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := b.Journal().Append(ctx, id, 1, oneRecord()); err != nil {
			t.Fatal(err)
		}
	}
	return a, b, s
}

// oneRecord is one record to append.
func oneRecord() []journal.Record { return []journal.Record{{Kind: "k", Data: []byte(`{}`)}} }
