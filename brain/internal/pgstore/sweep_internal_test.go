package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestSweepSkipsALeaseInUse: the secrets of a session whose lease ran out
// long ago, but whose lease row a transaction still holds (a first append
// or a write of secrets in flight, sent before the lease ran out), are
// not removed while it does; once it ended without creating the session,
// they are.
func TestSweepSkipsALeaseInUse(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	db, err := Open(ctx, Options{URL: url, SealingKey: []byte("0123456789abcdef0123456789abcdef"), NodeID: "a",
		LeaseDuration: time.Minute, OpTimeout: time.Second, Fenced: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const s = "in-use"
	if _, err := db.AcquireLease(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := db.Secrets().Put(ctx, s, "model.api_key", []byte("key")); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE brain_leases SET expires_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM brain_leases WHERE session_id = $1 FOR SHARE`, []byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := db.sweepSecrets(ctx); err != nil {
		t.Fatalf("sweep = %v", err)
	}
	if v, err := db.Secrets().Get(ctx, s, "model.api_key"); err != nil || string(v) != "key" {
		t.Fatalf("credential while its lease row is held = %q, %v; want it kept", v, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.sweepSecrets(ctx); err != nil {
		t.Fatalf("sweep = %v", err)
	}
	if v, err := db.Secrets().Get(ctx, s, "model.api_key"); err != nil || v != nil {
		t.Fatalf("credential of a session never created = %q, %v; want it removed", v, err)
	}
}
