package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var testKey = []byte("0123456789abcdef0123456789abcdef")

// fencedNodes opens nodes "a" and "b" on a database of their own, each
// fencing its writes with leases of lease, and answers the database's URL
// with them.
func fencedNodes(t testing.TB, lease time.Duration) (url string, a, b *pgstore.DB) {
	t.Helper()
	url = pgtest.Database(t)
	fenced := func(id string) func(*pgstore.Options) {
		return func(o *pgstore.Options) { o.Fenced, o.NodeID, o.LeaseDuration = true, id, lease }
	}
	return url, openDB(t, url, fenced("a")), openDB(t, url, fenced("b"))
}

// openDB opens a node on url, closed when t ends.
func openDB(t testing.TB, url string, mod func(*pgstore.Options)) *pgstore.DB {
	t.Helper()
	opts := pgstore.Options{URL: url, SealingKey: testKey, LeaseDuration: 2 * time.Second, OpTimeout: 5 * time.Second}
	if mod != nil {
		mod(&opts)
	}
	db, err := pgstore.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
