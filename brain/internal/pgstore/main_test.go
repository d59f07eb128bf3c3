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
