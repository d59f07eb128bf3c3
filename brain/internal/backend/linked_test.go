package backend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// TestLinkedSessionDirectoryIsOneSession: a session directory that is a
// symbolic link (moved elsewhere by hand, say) is one thing everywhere
// once the backend opens again: the journal lists it and refuses it as
// damaged, naming the link, rather than serving it by id while the
// listing leaves it out, and its sealed secrets are kept, not swept as a
// session that does not exist. The link and what it points to are left
// as they were; put back in place, the session opens with its secrets.
func TestLinkedSessionDirectoryIsOneSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ses_plain", "ses_linked"} {
		if err := b.Secrets.Put(ctx, id, "model.api_key", []byte("sk-"+id)); err != nil {
			t.Fatal(err)
		}
		if err := b.Journal.Append(ctx, id, 1, []journal.Record{{Kind: "session_creation_started", Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	sdir := filepath.Join(dir, "sessions", "ses_linked")
	moved := filepath.Join(t.TempDir(), "ses_linked")
	if err := os.Rename(sdir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, sdir); err != nil {
		t.Fatal(err)
	}
	segment := filepath.Join(moved, "journal", "00000000000000000001.segment")
	before, err := os.ReadFile(segment)
	if err != nil {
		t.Fatal(err)
	}

	b, err = Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.Secrets.Get(ctx, "ses_linked", "model.api_key"); err != nil || string(v) != "sk-ses_linked" {
		t.Errorf("secret of the linked session after open = %q, %v; want it kept", v, err)
	}
	ids, err := b.Journal.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if want := []string{"ses_linked", "ses_plain"}; !slices.Equal(ids, want) {
		t.Errorf("Sessions = %v, want %v", ids, want)
	}
	_, err = b.Journal.Read(ctx, "ses_linked", 0, 10, 1<<20)
	var de *journal.DamagedError
	if !errors.As(err, &de) || de.File != sdir || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Read of the linked session = %v, want it refused as damaged, naming %s as a symbolic link", err, sdir)
	}
	err = b.Journal.Append(ctx, "ses_linked", 2, []journal.Record{{Kind: "turn_started", Data: []byte(`{}`)}})
	if !errors.Is(err, journal.ErrDamaged) {
		t.Errorf("Append to the linked session = %v, want ErrDamaged", err)
	}
	if recs, err := b.Journal.Read(ctx, "ses_plain", 0, 10, 1<<20); err != nil || len(recs) != 1 {
		t.Errorf("Read of the plain session = %d records, %v", len(recs), err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(sdir); err != nil || target != moved {
		t.Fatalf("the link now reads %q, %v; want it kept pointing at %s", target, err, moved)
	}
	if after, err := os.ReadFile(segment); err != nil || string(after) != string(before) {
		t.Fatalf("the linked journal changed (%v)", err)
	}

	// Put back in place, the session is whole again.
	if err := os.Remove(sdir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, sdir); err != nil {
		t.Fatal(err)
	}
	b, err = Open(ctx, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if recs, err := b.Journal.Read(ctx, "ses_linked", 0, 10, 1<<20); err != nil || len(recs) != 1 {
		t.Errorf("Read of the session put back = %d records, %v", len(recs), err)
	}
	if v, err := b.Secrets.Get(ctx, "ses_linked", "model.api_key"); err != nil || string(v) != "sk-ses_linked" {
		t.Errorf("secret of the session put back = %q, %v", v, err)
	}
}
