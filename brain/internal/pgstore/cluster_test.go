package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

func sqlExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func rec(kind string, n int) journal.Record {
	return journal.Record{Kind: kind, Data: []byte(fmt.Sprintf(`{"n":%d}`, n))}
}

// TestConcurrentOpensMigrateOnce starts several nodes at once on an empty
// database: all open, and the schema is at the binary's version.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	url := pgtest.Database(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			db, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, SealingKey: testKey, NodeID: fmt.Sprint("n", i)})
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open = %v", err)
		}
	}
	ctx := context.Background()
	c, _ := pgx.Connect(ctx, url)
	defer c.Close(ctx)
	var v int
	if err := c.QueryRow(ctx, "SELECT version FROM brain_schema").Scan(&v); err != nil || v != pgstore.SchemaVersion {
		t.Fatalf("schema version = %d, %v; want %d", v, err, pgstore.SchemaVersion)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer binary is not
// touched by this one.
func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.Database(t)
	openDB(t, url, nil).Close()
	sqlExec(t, url, "UPDATE brain_schema SET version = version + 1")
	_, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, SealingKey: testKey})
	if !errors.Is(err, pgstore.ErrSchemaNewer) {
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaNewer", err)
	}
}

// TestSealingKeyMismatchRefused: a node whose key differs from the one the
// cluster was started with refuses to start; the right key still opens.
func TestSealingKeyMismatchRefused(t *testing.T) {
	url := pgtest.Database(t)
	openDB(t, url, nil)
	other := []byte("another key, another key, 32 by")
	if _, err := pgstore.Open(context.Background(), pgstore.Options{URL: url, SealingKey: other}); !errors.Is(err, pgstore.ErrKeyMismatch) {
		t.Fatalf("Open with another key = %v, want ErrKeyMismatch", err)
	}
	openDB(t, url, nil)
}

// TestLeaseRaceOneWinner: two nodes race for the same expired leases;
// for every session exactly one takes it and the other is told it is held.
func TestLeaseRaceOneWinner(t *testing.T) {
	url := pgtest.Database(t)
	short := func(o *pgstore.Options) { o.LeaseDuration = 300 * time.Millisecond }
	old := openDB(t, url, func(o *pgstore.Options) { short(o); o.NodeID = "old" })
	a := openDB(t, url, func(o *pgstore.Options) { short(o); o.NodeID = "a" })
	b := openDB(t, url, func(o *pgstore.Options) { short(o); o.NodeID = "b" })
	ctx := context.Background()
	const sessions = 40
	for i := range sessions {
		if _, err := old.AcquireLease(ctx, fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Asked at once: on a loaded machine the 40 acquisitions may
			// take longer than the lease.
			if _, err := a.AcquireLease(ctx, "s0"); !errors.Is(err, pgstore.ErrLeaseHeld) {
				t.Fatalf("Acquire of a live lease = %v, want ErrLeaseHeld", err)
			}
		}
	}
	time.Sleep(400 * time.Millisecond) // every lease expires
	for i := range sessions {
		s := fmt.Sprint("s", i)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var got [2]error
		var leases [2]pgstore.Lease
		for k, db := range []*pgstore.DB{a, b} {
			wg.Go(func() {
				<-start
				leases[k], got[k] = db.AcquireLease(ctx, s)
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for k := range got {
			switch {
			case got[k] == nil:
				wins++
				if leases[k].Epoch != 2 {
					t.Errorf("%s: winner's epoch = %d, want 2", s, leases[k].Epoch)
				}
			case !errors.Is(got[k], pgstore.ErrLeaseHeld):
				t.Fatalf("%s: loser's error = %v, want ErrLeaseHeld", s, got[k])
			}
		}
		if wins != 1 {
			t.Fatalf("%s: %d nodes took the lease, want exactly 1 (%v)", s, wins, got)
		}
		o, err := a.LeaseOwner(ctx, s)
		if err != nil || !o.Live || (o.NodeID != "a" && o.NodeID != "b") || o.Epoch != 2 {
			t.Fatalf("%s: owner = %+v, %v", s, o, err)
		}
	}
}

// TestFencedAppendAfterTakeover: once another node took the lease over, the
// old owner can neither append nor renew, even while it still believes its
// lease is live; what it tried to append is not in the journal.
func TestFencedAppendAfterTakeover(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Append without a lease = %v, want ErrNotOwner", err)
	}
	la, err := a.AcquireLease(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatalf("owner's Append = %v", err)
	}
	if _, err := b.AcquireLease(ctx, "s"); !errors.Is(err, pgstore.ErrLeaseHeld) {
		t.Fatalf("takeover of a live lease = %v, want ErrLeaseHeld", err)
	}
	// The lease expires in the database while a's clock says it is live
	// (a stalled node, a skewed clock): b takes it over.
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	lb, err := b.AcquireLease(ctx, "s")
	if err != nil || lb.Epoch != la.Epoch+1 {
		t.Fatalf("takeover = %+v, %v; want epoch %d", lb, err, la.Epoch+1)
	}
	if err := a.Journal().Append(ctx, "s", 2, []journal.Record{rec("stale", 2)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Append by the old owner = %v, want ErrNotOwner", err)
	}
	if _, err := a.RenewLease(ctx, la); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Renew by the old owner = %v, want ErrNotOwner", err)
	}
	if err := b.Journal().Append(ctx, "s", 2, []journal.Record{rec("new", 2)}); err != nil {
		t.Fatalf("new owner's Append = %v", err)
	}
	recs, err := b.Journal().Read(ctx, "s", 0, 0, 0)
	if err != nil || len(recs) != 2 || recs[1].Kind != "new" {
		t.Fatalf("journal = %+v, %v; want k then new", recs, err)
	}
	// Renewal keeps the lease; release hands it over at once.
	if lb, err = b.RenewLease(ctx, lb); err != nil {
		t.Fatalf("Renew = %v", err)
	}
	if err := b.ReleaseLease(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Append(ctx, "s", 3, []journal.Record{rec("k", 3)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Append after release = %v, want ErrNotOwner", err)
	}
	if l, err := a.AcquireLease(ctx, "s"); err != nil || l.Epoch != lb.Epoch+1 {
		t.Fatalf("Acquire after release = %+v, %v", l, err)
	}
}

// TestLeaseExpiresLocally: a node that did not renew in time stops
// appending without asking the database.
func TestLeaseExpiresLocally(t *testing.T) {
	url := pgtest.Database(t)
	a := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.LeaseDuration = true, 300*time.Millisecond })
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Append after the lease ran out = %v, want ErrNotOwner", err)
	}
	if n, _ := a.Journal().Next(ctx, "s"); n != 1 {
		t.Fatalf("Next = %d, want 1", n)
	}
}

// TestSubscriptionFollowsOtherNode: a subscriber on node A sees, in order
// and without gaps, what node B commits, and B's delete ends it.
func TestSubscriptionFollowsOtherNode(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, nil), openDB(t, url, nil)
	ctx := context.Background()
	if err := b.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1), rec("k", 2)}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Journal().Subscribe(ctx, "s", 1, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const total = 500
	go func() {
		for n := 3; n <= total; n += 7 {
			var rs []journal.Record
			for i := n; i < n+7 && i <= total; i++ {
				rs = append(rs, rec("k", i))
			}
			if err := b.Journal().Append(ctx, "s", uint64(n), rs); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for want := 2; want <= total; want++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := sub.Next(nctx)
		cancel()
		if err != nil {
			t.Fatalf("Next (want %d) = %v", want, err)
		}
		if r.Sequence != uint64(want) || string(r.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("got %d %s, want %d", r.Sequence, r.Data, want)
		}
	}
	if err := b.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := sub.Next(nctx); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Next after another node's Delete = %v, want ErrNotFound", err)
	}
}

// TestModules: bytes stored under their hash come back, and damaged bytes
// are refused.
func TestModules(t *testing.T) {
	url := pgtest.Database(t)
	a, b := openDB(t, url, nil), openDB(t, url, nil)
	ctx := context.Background()
	wasm := []byte("\x00asm\x01\x00\x00\x00 module bytes")
	id, err := a.PutModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.PutModule(ctx, wasm); err != nil || again != id {
		t.Fatalf("second PutModule = %s, %v", again, err)
	}
	if got, err := b.Module(ctx, id); err != nil || string(got) != string(wasm) {
		t.Fatalf("Module on another node = %q, %v", got, err)
	}
	if ids, err := b.ModuleIDs(ctx, "", 0); err != nil || len(ids) != 1 || ids[0] != id {
		t.Fatalf("ModuleIDs = %v, %v", ids, err)
	}
	if _, err := b.Module(ctx, "00"); !errors.Is(err, pgstore.ErrModuleNotFound) {
		t.Fatalf("unknown module = %v", err)
	}
	sqlExec(t, url, "UPDATE brain_modules SET bytes = 'x'::bytea")
	if _, err := b.Module(ctx, id); !errors.Is(err, pgstore.ErrModuleDamaged) {
		t.Fatalf("damaged module = %v, want ErrModuleDamaged", err)
	}
}

// TestMembership: live nodes are listed; a closed node leaves.
func TestMembership(t *testing.T) {
	url := pgtest.Database(t)
	a := openDB(t, url, func(o *pgstore.Options) { o.NodeID, o.PublicURL = "a", "http://127.0.0.1:1" })
	b := openDB(t, url, func(o *pgstore.Options) { o.NodeID, o.PublicURL = "b", "http://127.0.0.1:2" })
	ctx := context.Background()
	ms, err := a.Members(ctx)
	if err != nil || len(ms) != 2 || ms[1].PublicURL != "http://127.0.0.1:2" {
		t.Fatalf("Members = %+v, %v", ms, err)
	}
	b.Close()
	if ms, err := a.Members(ctx); err != nil || len(ms) != 1 || ms[0].NodeID != "a" {
		t.Fatalf("Members after b closed = %+v, %v", ms, err)
	}
}

// TestSubscriptionWithoutWakeUp: a commit whose node died before sending
// its wake-up (here: rows written directly) still reaches a subscriber on
// another node, by polling.
func TestSubscriptionWithoutWakeUp(t *testing.T) {
	url := pgtest.Database(t)
	a := openDB(t, url, nil)
	ctx := context.Background()
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Journal().Subscribe(ctx, "s", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sqlExec(t, url, `INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, frame_bytes)
		VALUES ('s', 2, 'k', 1, '{"n":2}', 40)`)
	sqlExec(t, url, `UPDATE brain_sessions SET next_seq = 3 WHERE session_id = 's'`)
	nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := sub.Next(nctx)
	if err != nil || r.Sequence != 2 || string(r.Data) != `{"n":2}` {
		t.Fatalf("Next = %+v, %v; want record 2", r, err)
	}
}

// TestFencedDeleteAfterTakeover: once another node took a session's lease
// over, the old owner cannot delete the session, even while it still
// believes its lease is live: the new owner's journal stays whole. The
// owner deletes it.
func TestFencedDeleteAfterTakeover(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Delete(ctx, "s"); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Delete by a node without the lease = %v, want ErrNotOwner", err)
	}
	// The lease expires in the database while a's clock says it is live
	// (a stalled node): b takes it over and appends.
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Append(ctx, "s", 2, []journal.Record{rec("new", 2)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Delete(ctx, "s"); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Delete by the old owner = %v, want ErrNotOwner", err)
	}
	if recs, err := b.Journal().Read(ctx, "s", 0, 0, 0); err != nil || len(recs) != 2 {
		t.Fatalf("journal after the old owner's delete = %+v, %v; want both records", recs, err)
	}
	if err := b.Journal().Append(ctx, "s", 3, []journal.Record{rec("more", 3)}); err != nil {
		t.Fatalf("new owner's Append after the old owner's delete = %v", err)
	}
	if err := b.Journal().Delete(ctx, "s"); err != nil {
		t.Fatalf("owner's Delete = %v", err)
	}
	if n, err := b.Journal().Next(ctx, "s"); err != nil || n != 1 {
		t.Fatalf("Next after the owner's delete = %d, %v; want 1", n, err)
	}
}
