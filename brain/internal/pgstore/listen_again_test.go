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

// TestListenerListensAgainPromptlyEachTime: the server ends the
// connection on which a node listens for other nodes' commits, again and
// again (an administrator's pg_terminate_backend, a pooler that restarts).
// Each time the node listens again on a new connection within a moment:
// losses that passed do not make the next one wait longer, during which
// other nodes' commits would reach its subscribers only at the polls.
func TestListenerListensAgainPromptlyEachTime(t *testing.T) {
	url := pgtest.Database(t)
	// A lease this long keeps the listener from pinging during the test,
	// so its connection's last statement stays the LISTEN.
	openDB(t, url, func(o *pgstore.Options) { o.LeaseDuration = time.Minute })
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// listener answers the backend of the node's listening connection
	// other than old, waiting up to 10 s for one.
	listener := func(old int32) int32 {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			var pid int32
			err := admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
				AND query = 'LISTEN brain_journal' AND pid <> pg_backend_pid() AND pid <> $1`, old).Scan(&pid)
			if err == nil {
				return pid
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
		}
		t.Fatalf("no connection listens after backend %d ended", old)
		return 0
	}
	pid := listener(0)
	for i := range 8 {
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		pid = listener(pid)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("after the listening connection was ended %d times, the node took %v to listen again", i+1, took.Round(time.Millisecond))
		}
	}
}
