package secrets

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// otherUID owns the files the tests give to another user.
const otherUID = 54321

// sealedStore answers a store directory holding a key and one sealed
// secret of ses_a.
func sealedStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "server-metadata")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "ses_a", "k", []byte("secret-a")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chownOther gives path to otherUID, skipping the test where the process
// may not.
func chownOther(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		t.Skipf("cannot give %s to another user: %v", path, err)
	}
}

// TestUnsafeFilesAreRefused: a key file or a directory of the store that
// another user owns, or that group or others may write, and a sealed
// file another user owns or may write, stop Open with an error naming
// the file and what is wrong with it, before anything is read or
// written; once the operator puts it right, the store opens with its
// secrets intact.
func TestUnsafeFilesAreRefused(t *testing.T) {
	cases := []struct {
		name  string
		file  string // relative to the store directory
		spoil func(t *testing.T, path string)
		fix   func(path string) error
		want  error
		says  string
	}{
		{"key owned by another user", keyName, chownOther, ownBack, ErrKey, "owned by uid 54321"},
		{"directory owned by another user", ".", chownOther, ownBack, ErrUnsafe, "owned by uid 54321"},
		{"directory group-writable", ".", chmod(0o770), chmodFix(0o700), ErrUnsafe, "drwxrwx---"},
		{"directory world-writable", ".", chmod(0o777), chmodFix(0o700), ErrUnsafe, "drwxrwxrwx"},
		{"sessions owned by another user", "sessions", chownOther, ownBack, ErrUnsafe, "owned by uid 54321"},
		{"sessions group-writable", "sessions", chmod(0o730), chmodFix(0o700), ErrUnsafe, "drwx-wx---"},
		{"sealed file owned by another user", "sessions/ses_a.sealed", chownOther, ownBack, ErrUnsafe, "owned by uid 54321"},
		{"sealed file group-writable", "sessions/ses_a.sealed", chmod(0o620), chmodFix(0o600), ErrUnsafe, "-rw--w----"},
		{"sealed file world-writable", "sessions/ses_a.sealed", chmod(0o602), chmodFix(0o600), ErrUnsafe, "-rw-----w-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := sealedStore(t)
			path := filepath.Clean(filepath.Join(dir, c.file))
			c.spoil(t, path)
			key, _ := os.ReadFile(filepath.Join(dir, keyName))
			_, err := Open(dir)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %v, want %v", err, c.want)
			}
			if msg := err.Error(); !strings.Contains(msg, path+" ") || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q: want it to name %s and say %q", msg, path, c.says)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, keyName)); string(after) != string(key) {
				t.Fatal("the refused Open changed the key file")
			}
			if err := c.fix(path); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatalf("Open once put right = %v", err)
			}
			if v, err := s.Get(context.Background(), "ses_a", "k"); err != nil || string(v) != "secret-a" {
				t.Fatalf("Get once put right = %q, %v", v, err)
			}
		})
	}
}

// TestUnsafeDirectoryRefusedBeforeKeyIsMade: a new store directory that
// others may write gets no key: a key made there could be swapped for
// one they know before anything is sealed under it.
func TestUnsafeDirectoryRefusedBeforeKeyIsMade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server-metadata")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open = %v, want ErrUnsafe naming %s", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, keyName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a key was made in a directory others may write: %v", err)
	}
}

// TestSealedFileThatIsNotAFileIsRefused: a named pipe in place of a
// sealed file stops Open naming it, instead of holding every later read
// of that session's secrets (and with them the whole store) without end.
func TestSealedFileThatIsNotAFileIsRefused(t *testing.T) {
	dir := sealedStore(t)
	p := filepath.Join(dir, "sessions", "ses_b.sealed")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(dir)
		if err == nil {
			_, err = s.Get(context.Background(), "ses_b", "k")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), p) {
			t.Fatalf("Open with a named pipe for a sealed file = %v, want ErrUnsafe naming %s", err, p)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("reading a named pipe sealed file did not return")
	}
}

func chmod(mode os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func chmodFix(mode os.FileMode) func(string) error {
	return func(path string) error { return os.Chmod(path, mode) }
}

func ownBack(path string) error { return os.Lchown(path, os.Geteuid(), os.Getegid()) }

// TestUnsafeDirectoryGetsNoSessionsDirectory: a store directory others
// may write is refused before sessions/ is made in it.
func TestUnsafeDirectoryGetsNoSessionsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "server-metadata")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	chownOther(t, dir)
	if _, err := Open(dir); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open = %v, want ErrUnsafe naming %s", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sessions/ was made in a directory another user owns: %v", err)
	}
}

// TestSealedFileReplacedByPipeAfterOpen: a named pipe put in place of a
// session's sealed file after Open checked the files makes Get of that
// session fail at once, naming the file, rather than wait for a writer
// while holding the store's lock; other sessions are still served.
func TestSealedFileReplacedByPipeAfterOpen(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"ses_a", "ses_b"} {
		if err := st.Put(ctx, id, "k", []byte("v-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "sessions", "ses_a"+sealedExt)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	pipetest.Make(t, p)
	err = pipetest.Within(t, p, 5*time.Second, func() error {
		_, err := st.Get(ctx, "ses_a", "k")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "ses_a") {
		t.Fatalf("Get of a session whose sealed file is a pipe: %v", err)
	}
	if v, err := st.Get(ctx, "ses_b", "k"); err != nil || string(v) != "v-ses_b" {
		t.Fatalf("another session: %q, %v", v, err)
	}
}
