package idem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// failReopen makes the next n opens of a compacted requests log fail as
// when the process has no file descriptor left.
func failReopen(t *testing.T, n int) {
	t.Helper()
	left := n
	openLog = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if left > 0 {
			left--
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.OpenFile(name, flag, perm)
	}
	t.Cleanup(func() { openLog = os.OpenFile })
}

// logWithDeadEntries leaves at path a requests log holding one answered
// key and a released one, so that the next Open compacts it.
func logWithDeadEntries(t *testing.T, path string, d [32]byte) {
	t.Helper()
	ctx := context.Background()
	s := open(t, path, nil)
	c, _, err := s.Claim(ctx, "create_session", "kept", d)
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if err := c.Answer(200, []byte(`{"kept":true}`)); err != nil {
		t.Fatalf("Answer = %v", err)
	}
	c, _, err = s.Claim(ctx, "create_session", "released", d)
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	if err := c.Release(); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

// A compaction at Open that renamed the new file into place but could not
// open it must not leave the store writing to the replaced file: every
// claim and answer acknowledged afterwards is found after a restart.
func TestOpenCompactionReopenFailureLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	ctx := context.Background()
	d := Digest([]byte("POST"), []byte("body"))
	logWithDeadEntries(t, path, d)

	failReopen(t, 1)
	s := open(t, path, nil)
	acked := 0
	for i := range 3 {
		key := fmt.Sprintf("after-%d", i)
		c, _, err := s.Claim(ctx, "create_session", key, d)
		if err != nil {
			if !errors.Is(err, ErrWrite) {
				t.Fatalf("Claim(%s) = %v, want a claim or ErrWrite", key, err)
			}
			continue
		}
		if err := c.Answer(201, []byte(key)); err != nil {
			t.Fatalf("Answer(%s) = %v", key, err)
		}
		acked++
	}
	if acked == 0 {
		t.Fatal("no claim succeeded once file descriptors were available again")
	}
	s.Close()

	s2 := open(t, path, nil)
	if _, a, err := s2.Claim(ctx, "create_session", "kept", d); err != nil || a == nil || string(a.Body) != `{"kept":true}` {
		t.Fatalf("kept key after restart = %+v, %v; want its answer", a, err)
	}
	for i := range 3 {
		key := fmt.Sprintf("after-%d", i)
		c, a, err := s2.Claim(ctx, "create_session", key, d)
		if err != nil || a == nil || a.Status != 201 || string(a.Body) != key {
			if c != nil {
				c.Release()
			}
			t.Errorf("%s after restart = %+v, %v; want the answer acknowledged before the restart", key, a, err)
		}
	}
}

// While the compacted file cannot be opened, the store refuses claims
// with ErrWrite rather than acknowledge what a restart would not find.
func TestOpenCompactionReopenFailingRefusesClaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	ctx := context.Background()
	d := Digest([]byte("POST"), []byte("body"))
	logWithDeadEntries(t, path, d)

	failReopen(t, 1<<30)
	s := open(t, path, nil)
	if _, _, err := s.Claim(ctx, "create_session", "refused", d); !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Claim with the log not reopenable = %v, want ErrWrite naming EMFILE", err)
	}
	if err := s.Healthy(); !errors.Is(err, ErrWrite) {
		t.Fatalf("Healthy = %v, want ErrWrite", err)
	}
	s.Close()
	openLog = os.OpenFile

	s2 := open(t, path, nil)
	if c, a, err := s2.Claim(ctx, "create_session", "refused", d); err != nil || c == nil || a != nil {
		t.Fatalf("refused key after restart = %v, %+v, %v; want a fresh claim", c, a, err)
	}
	if _, a, err := s2.Claim(ctx, "create_session", "kept", d); err != nil || a == nil {
		t.Fatalf("kept key after restart = %+v, %v; want its answer", a, err)
	}
}
