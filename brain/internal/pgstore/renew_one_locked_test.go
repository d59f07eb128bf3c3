package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// lockLeaseRow locks session's lease row in a transaction of its own (as
// another node stopped in the middle of taking the lease does) and
// answers a function that ends the transaction, giving the lock up.
func lockLeaseRow(t *testing.T, url, session string) (unlock func()) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM brain_leases WHERE session_id = $1 FOR UPDATE`, []byte(session)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			tx.Rollback(ctx)
			c.Close(ctx)
		})
	}
	t.Cleanup(unlock)
	return unlock
}

// TestRenewLeaseOnALockedRow: RenewLease of a lease whose row another
// transaction keeps locked does not wait for the lock past the lease.
// While the row stays locked the lease is kept until its deadline and
// then answered lost (ErrNotOwner) at once; a lock given up before the
// deadline lets the renewal through.
func TestRenewLeaseOnALockedRow(t *testing.T) {
	// A statement may wait on a row lock a quarter of OpTimeout: longer
	// than the lease.
	const lease, op = 1500 * time.Millisecond, 12 * time.Second
	url := pgtest.Database(t)
	db := openDB(t, url, func(o *pgstore.Options) {
		o.Fenced, o.NodeID, o.LeaseDuration, o.OpTimeout = true, "a", lease, op
	})
	ctx := context.Background()

	t.Run("locked past the deadline", func(t *testing.T) {
		l, err := db.AcquireLease(ctx, "s0")
		if err != nil {
			t.Fatal(err)
		}
		lockLeaseRow(t, url, "s0")
		_, err = db.RenewLease(ctx, l)
		late := time.Since(l.Deadline)
		if !errors.Is(err, pgstore.ErrNotOwner) {
			t.Errorf("RenewLease of a lease whose row stayed locked past its deadline = %v, want ErrNotOwner", err)
		}
		if late > 500*time.Millisecond {
			t.Errorf("RenewLease answered %v after the lease's deadline", late.Round(time.Millisecond))
		}
		if late < 0 {
			t.Errorf("RenewLease gave the lease up %v before its deadline", (-late).Round(time.Millisecond))
		}
		if _, held := db.Held("s0"); held {
			t.Error("the lease that could not be renewed is still held")
		}
	})

	t.Run("unlocked before the deadline", func(t *testing.T) {
		l, err := db.AcquireLease(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		unlock := lockLeaseRow(t, url, "s1")
		time.AfterFunc(lease/3, unlock)
		r, err := db.RenewLease(ctx, l)
		if err != nil {
			t.Fatalf("RenewLease after the row's lock was given up = %v", err)
		}
		if !r.Deadline.After(l.Deadline) {
			t.Errorf("renewed deadline %v, not after the acquired one %v", r.Deadline, l.Deadline)
		}
		var left float64
		sqlScan(t, url, `SELECT extract(epoch FROM expires_at - now())::float8 FROM brain_leases WHERE session_id = 's1'::bytea`, &left)
		if left < (lease / 2).Seconds() {
			t.Errorf("the renewed lease runs out in %.2fs in the database", left)
		}
	})
}
