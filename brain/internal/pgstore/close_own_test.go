package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestCloseEndsBlockedOwn: an Own waiting for a lease row another
// transaction keeps locked does not hold Close up: Close gives the
// acquisition up at once, Own answers that the store closed
// (ErrUnavailable, ErrClosed), and the node took no lease, so the row
// is still the other node's once its lock is gone.
func TestCloseEndsBlockedOwn(t *testing.T) {
	url := pgtest.Database(t)
	// A statement waits for a row lock up to a quarter of OpTimeout.
	const op = 40 * time.Second
	a := openDB(t, url, func(o *pgstore.Options) { o.NodeID, o.OpTimeout = "a", op })
	ctx := context.Background()
	sqlExec(t, url, `INSERT INTO brain_leases (session_id, node_id, epoch, expires_at) VALUES ($1, 'b', 3, '-infinity')`, []byte("s"))

	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM brain_leases WHERE session_id = $1 FOR UPDATE`, []byte("s")); err != nil {
		t.Fatal(err)
	}

	owned := make(chan error, 1)
	go func() {
		_, err := a.Own(ctx, "s")
		owned <- err
	}()
	// Wait until the acquisition waits for the row's lock.
	for {
		var waiting bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-owned:
			t.Fatalf("Own answered %v while the lease row was locked", err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	start := time.Now()
	a.Close()
	took := time.Since(start)
	// Before, Close waited for the acquisition's lock wait to end, a
	// quarter of op.
	if took > op/16 {
		t.Errorf("Close took %v while an Own waited for a locked lease row; want it to give the acquisition up at once", took.Round(time.Millisecond))
	}
	select {
	case err := <-owned:
		if !errors.Is(err, pgstore.ErrClosed) || !errors.Is(err, pgstore.ErrUnavailable) {
			t.Errorf("Own ended by Close = %v; want ErrUnavailable and ErrClosed", err)
		}
	case <-time.After(op / 16):
		t.Fatal("Own did not answer after Close returned")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var node string
	var epoch int64
	if err := holder.QueryRow(ctx, `SELECT node_id, epoch FROM brain_leases WHERE session_id = $1`, []byte("s")).Scan(&node, &epoch); err != nil {
		t.Fatal(err)
	}
	if node != "b" || epoch != 3 {
		t.Errorf("after Close, the lease row names node %q epoch %d; want b's, untouched", node, epoch)
	}
}
