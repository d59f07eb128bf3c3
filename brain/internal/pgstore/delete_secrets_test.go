package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestDeleteTakesSecrets: deleting a session removes its credentials with
// its journal, so a lease that runs out right after the delete leaves
// none behind: forgetting them afterwards succeeds, there being nothing
// left to forget, and a session created anew under the same id by
// another node is not given any of them.
func TestDeleteTakesSecrets(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.api_key", "environment.x.credential"} {
		if err := a.Secrets().Put(ctx, "s", name, []byte("a's "+name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("created", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	// a stalls right after the delete; its lease runs out in the database.
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	if err := a.Secrets().DeleteAll(ctx, "s"); err != nil {
		t.Errorf("DeleteAll after the session's delete, lease gone = %v, want nil (nothing left)", err)
	}
	if err := b.Secrets().DeleteAll(ctx, "s"); err != nil {
		t.Errorf("DeleteAll by a node that never held the lease, after the delete = %v, want nil (nothing left)", err)
	}
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.api_key", "environment.x.credential"} {
		if v, err := b.Secrets().Get(ctx, "s", name); err != nil || v != nil {
			t.Errorf("%s of the session created anew = %q, %v; want none", name, v, err)
		}
	}
}

// TestPlainDeleteTakesSecrets: without fencing too, a session's delete
// removes its credentials with its journal.
func TestPlainDeleteTakesSecrets(t *testing.T) {
	db := openDB(t, pgtest.Database(t), nil)
	ctx := context.Background()
	if err := db.Secrets().Put(ctx, "s", "model.api_key", []byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal().Append(ctx, "s", 1, []journal.Record{rec("created", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Secrets().Get(ctx, "s", "model.api_key"); err != nil || v != nil {
		t.Fatalf("credential after the session's delete = %q, %v; want none", v, err)
	}
}

// TestStaleDeleteKeepsNewCreationsSecrets: a node whose lease ran out
// deletes a session that has no journal yet while another node creates
// the session under the same id: the new creation keeps its credentials.
// The owner's delete of such a session removes them.
func TestStaleDeleteKeepsNewCreationsSecrets(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Secrets().Put(ctx, "s", "model.api_key", []byte("b's key")); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Secrets().Get(ctx, "s", "model.api_key"); err != nil || string(v) != "b's key" {
		t.Fatalf("credential of the session being created after a stale delete = %q, %v; want \"b's key\"", v, err)
	}
	if err := b.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Secrets().Get(ctx, "s", "model.api_key"); err != nil || v != nil {
		t.Fatalf("credential after the owner's delete = %q, %v; want none", v, err)
	}
}
