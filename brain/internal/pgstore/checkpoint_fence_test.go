package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// TestStaleOwnerCannotWriteCheckpoint: once another node took a session's
// lease over, the old owner, which still believes its lease is live, can
// write no checkpoint of the session: not over the new owner's newer one,
// and not over a session of the same id created anew after a delete, whose
// records its projection does not describe. A node that never held the
// lease writes none either. The owner's own checkpoints are kept.
func TestStaleOwnerCannotWriteCheckpoint(t *testing.T) {
	url, a, b := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1), rec("k", 2), rec("k", 3)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().WriteCheckpoint(ctx, "s", 3, []byte("a3")); err != nil {
		t.Fatalf("owner's WriteCheckpoint = %v", err)
	}
	if err := b.Journal().WriteCheckpoint(ctx, "s", 2, []byte("b2")); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("WriteCheckpoint by a node without the lease = %v, want ErrNotOwner", err)
	}
	// The lease expires in the database while a's clock says it is live
	// (a stalled node): b takes it over, appends and checkpoints.
	sqlExec(t, url, "UPDATE brain_leases SET expires_at = now() - interval '1 second'")
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Append(ctx, "s", 4, []journal.Record{rec("k", 4), rec("k", 5), rec("k", 6)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().WriteCheckpoint(ctx, "s", 6, []byte("b6")); err != nil {
		t.Fatalf("new owner's WriteCheckpoint = %v", err)
	}
	if err := a.Journal().WriteCheckpoint(ctx, "s", 3, []byte("a3 again")); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("WriteCheckpoint by the old owner = %v, want ErrNotOwner", err)
	}
	if through, payload, err := b.Journal().ReadCheckpoint(ctx, "s"); err != nil || through != 6 || string(payload) != "b6" {
		t.Fatalf("ReadCheckpoint after the old owner's write = %d %q, %v; want the new owner's, 6 \"b6\"", through, payload, err)
	}
	// The new owner deletes the session and creates one of the same id;
	// the old owner's projection of the first one must not become the
	// second one's checkpoint.
	if err := b.Journal().Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Journal().Append(ctx, "s", 1, []journal.Record{rec("new", 1), rec("new", 2), rec("new", 3)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().WriteCheckpoint(ctx, "s", 3, []byte("a3 of the deleted session")); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("WriteCheckpoint by the old owner over a session created anew = %v, want ErrNotOwner", err)
	}
	if through, payload, err := b.Journal().ReadCheckpoint(ctx, "s"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ReadCheckpoint of the session created anew = %d %q, %v; want ErrNotFound", through, payload, err)
	}
}

// TestOwnerCannotCheckpointEmptySession: the lease holder of a session
// that holds no record yet writes no checkpoint of it (ErrInvalid), so
// the session's first records are never covered by a projection of
// nothing.
func TestOwnerCannotCheckpointEmptySession(t *testing.T) {
	_, a, _ := fencedNodes(t, 30*time.Second)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().WriteCheckpoint(ctx, "s", 0, []byte("nothing")); !errors.Is(err, journal.ErrInvalid) {
		t.Fatalf("WriteCheckpoint of a session without records = %v, want ErrInvalid", err)
	}
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1), rec("k", 2)}); err != nil {
		t.Fatal(err)
	}
	if through, payload, err := a.Journal().ReadCheckpoint(ctx, "s"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ReadCheckpoint once records exist = %d %q, %v; want ErrNotFound", through, payload, err)
	}
	if err := a.Journal().WriteCheckpoint(ctx, "s", 2, []byte("two")); err != nil {
		t.Fatalf("WriteCheckpoint through the last record = %v", err)
	}
}
