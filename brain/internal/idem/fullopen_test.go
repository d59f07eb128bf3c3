package idem

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// A restart on a full disk opens the requests log even when it holds
// released or expired entries a compaction would drop: the compaction is
// left for later, answers replay, and once space is back the store writes
// again and the next Open compacts. (Brain could not start otherwise, and
// so could not delete sessions to free the space.)
func TestOpenOnFullDiskLeavesCompactionForLater(t *testing.T) {
	dir, path, s, d, _ := fullDiskStore(t)
	ctx := t.Context()
	busy, _, err := s.Claim(ctx, "op", "busy", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := busy.Release(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _ := os.ReadFile(path)

	filler := fullfs.Fill(t, dir)
	s, err = Open(path, nil)
	if err != nil {
		t.Fatalf("Open on a full disk = %v", err)
	}
	if _, a, err := s.Claim(ctx, "op", "done", d); err != nil || a == nil || string(a.Body) != `{"n":1}` {
		t.Fatalf("replay on a full disk = %+v, %v", a, err)
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("unanswered claim on a full disk = %v, want ErrAmbiguous", err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, before) {
		t.Fatalf("the log changed on a full disk: %d bytes, want %d", len(b), len(before))
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "requests", ".tmp-*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}

	filler.Free(t)
	c, a, err := s.Claim(ctx, "op", "busy", d)
	if err != nil || a != nil {
		t.Fatalf("Claim of the released key after space came back = %+v, %v", a, err)
	}
	if err := c.Answer(201, []byte(`{"n":2}`)); err != nil {
		t.Fatalf("Answer after space came back = %v", err)
	}
	s.Close()
	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "op", "busy", d); err != nil || a == nil || a.Status != 201 {
		t.Fatalf("after reopen, busy = %+v, %v; want its answer", a, err)
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("after reopen, pending = %v, want ErrAmbiguous", err)
	}
	if fi, _ := os.Stat(path); fi.Size() != s.liveBytes() {
		t.Errorf("the log holds %d bytes after a reopen with space, want %d (compacted)", fi.Size(), s.liveBytes())
	}
}
