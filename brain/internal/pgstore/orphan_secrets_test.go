package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestOrphanedSecretsAreRemoved: a node stores a session's credentials,
// then loses its lease before the session's first append, which is
// refused, and cannot forget the credentials either (it is no longer the
// owner). The credentials of a session that never existed are removed by
// the cluster once no node can create it any more, while those of a
// session that exists but is passivated, and those of a session being
// created under a live lease, are kept.
func TestOrphanedSecretsAreRemoved(t *testing.T) {
	url := pgtest.Database(t)
	node := func(id string) func(*pgstore.Options) {
		return func(o *pgstore.Options) {
			o.Fenced, o.KeepLeases, o.NodeID = true, true, id
			o.LeaseDuration, o.OpTimeout = 3*time.Second, time.Second
		}
	}
	a, b := openDB(t, url, node("a")), openDB(t, url, node("b"))
	ctx := context.Background()
	put := func(db *pgstore.DB, s string) {
		t.Helper()
		if _, err := db.AcquireLease(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := db.Secrets().Put(ctx, s, "model.api_key", []byte(s+" key")); err != nil {
			t.Fatal(err)
		}
	}

	// a's creation of "orphan": the lease runs out between storing the
	// credential and the first append.
	put(a, "orphan")
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 hour' WHERE session_id = $1", []byte("orphan"))
	if err := a.Journal().Append(ctx, "orphan", 1, []journal.Record{rec("created", 1)}); err == nil {
		t.Fatal("an append without the live lease committed")
	}
	if err := a.Secrets().DeleteAll(ctx, "orphan"); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("DeleteAll after losing the lease = %v, want ErrNotOwner", err)
	}

	// "passivated" exists: its lease was given up long ago.
	put(b, "passivated")
	if err := b.Journal().Append(ctx, "passivated", 1, []journal.Record{rec("created", 1)}); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 hour' WHERE session_id = $1", []byte("passivated"))
	// "creating" is being created by b, which holds its lease.
	put(b, "creating")

	deadline := time.Now().Add(45 * time.Second)
	for {
		v, err := b.Secrets().Get(ctx, "orphan", "model.api_key")
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the credential of a session that was never created is still stored")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range []string{"passivated", "creating"} {
		if v, err := a.Secrets().Get(ctx, s, "model.api_key"); err != nil || string(v) != s+" key" {
			t.Fatalf("credential of %s = %q, %v; want it kept", s, v, err)
		}
	}
}
