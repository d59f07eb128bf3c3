package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// TestStaleOwnerCannotTouchSecrets: a node whose creation of a session
// stalled until its lease ran out, and another node created the session
// under the same id, can neither replace that session's credentials with
// its own nor forget them when its creation then fails: the session keeps
// the credentials it was created with. A node without the lease touches
// none either.
func TestStaleOwnerCannotTouchSecrets(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Secrets().Put(ctx, "s", "model.api_key", []byte("a's key")); err != nil {
		t.Fatalf("owner's Put = %v", err)
	}
	if err := b.Secrets().Put(ctx, "s", "model.api_key", []byte("b's key")); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Put by a node without the lease = %v, want ErrNotOwner", err)
	}
	if err := b.Secrets().DeleteAll(ctx, "s"); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("DeleteAll by a node without the lease = %v, want ErrNotOwner", err)
	}
	// a stalls; its lease runs out in the database and b creates the
	// session under the same id.
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Secrets().Put(ctx, "s", "model.api_key", []byte("b's key")); err != nil {
		t.Fatalf("new owner's Put = %v", err)
	}
	if err := b.Journal().Append(ctx, "s", 1, []journal.Record{rec("created", 1)}); err != nil {
		t.Fatal(err)
	}
	// a resumes: it stores its next credential, then its creation fails
	// and it forgets the session's secrets.
	if err := a.Secrets().Put(ctx, "s", "model.api_key", []byte("a's key again")); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("Put by the old owner = %v, want ErrNotOwner", err)
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("created", 1)}); err == nil {
		t.Fatal("the old owner's creation committed")
	}
	if err := a.Secrets().DeleteAll(ctx, "s"); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("DeleteAll by the old owner = %v, want ErrNotOwner", err)
	}
	if v, err := b.Secrets().Get(ctx, "s", "model.api_key"); err != nil || string(v) != "b's key" {
		t.Fatalf("the session's credential = %q, %v; want \"b's key\", the one it was created with", v, err)
	}
	// The owner deletes the session, then its secrets.
	if err := b.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Secrets().DeleteAll(ctx, "s"); err != nil {
		t.Fatalf("owner's DeleteAll after Delete = %v", err)
	}
	if v, err := b.Secrets().Get(ctx, "s", "model.api_key"); err != nil || v != nil {
		t.Fatalf("credential after the owner's DeleteAll = %q, %v; want none", v, err)
	}
}
