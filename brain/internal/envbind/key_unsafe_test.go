package envbind

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// TestUnsafeKeyFileIsRefused: a reporter key that other users may read
// (they could forge reporter tokens with it) or that another user owns
// (they could swap it for one they know) is refused with ErrKey, an error
// naming the file and saying how to put it right; the file is left as it
// was, and once put right the same key is read.
func TestUnsafeKeyFileIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(path string) error
		fix   func(path string) error
		says  []string
	}{
		{"group-readable", chmodKey(0o640), chmodKey(0o600), []string{"-rw-r-----", "chmod 600"}},
		{"world-readable", chmodKey(0o604), chmodKey(0o600), []string{"-rw----r--", "chmod 600"}},
		{"group-writable", chmodKey(0o620), chmodKey(0o600), []string{"-rw--w----", "chmod 600"}},
		{"owned by another user", chownKey(54321), chownKey(os.Geteuid()), []string{"owned by uid 54321", "chown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), KeyFileName)
			key, err := loadKey(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.spoil(path); err != nil {
				if errors.Is(err, syscall.EPERM) {
					t.Skipf("cannot spoil the key file here: %v", err)
				}
				t.Fatal(err)
			}
			_, err = loadKey(path)
			if !errors.Is(err, ErrKey) {
				t.Fatalf("loadKey of a %s key = %v, want ErrKey", c.name, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Fatalf("error %q does not name %s", msg, path)
			}
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Fatalf("error %q does not say %q", msg, s)
				}
			}
			if after, err := os.ReadFile(path); err != nil || string(after) != string(key) {
				t.Fatalf("the refused load changed the key file (%v)", err)
			}
			if err := c.fix(path); err != nil {
				t.Fatal(err)
			}
			again, err := loadKey(path)
			if err != nil || string(again) != string(key) {
				t.Fatalf("loadKey once put right = %v; same key: %v", err, string(again) == string(key))
			}
		})
	}
}

// TestKeyFileThatIsNotAFileIsRefused: a reporter key path that is a named
// pipe fails the load with ErrKey naming it, instead of holding the
// server's start (or a delivery) in a read that never ends.
func TestKeyFileThatIsNotAFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFileName)
	pipetest.Make(t, path)
	err := pipetest.Within(t, path, 10*time.Second, func() error {
		_, err := loadKey(path)
		return err
	})
	if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), path) {
		t.Fatalf("loadKey of a named pipe = %v, want ErrKey naming %s", err, path)
	}
}

func chmodKey(mode os.FileMode) func(string) error {
	return func(path string) error { return os.Chmod(path, mode) }
}

func chownKey(uid int) func(string) error {
	return func(path string) error { return os.Lchown(path, uid, -1) }
}

// TestFirstLoadsAgreeOnTheKey: loads at once of a key file that does not
// exist yet all answer one key, the one the file keeps: reporter tokens
// handed out by any of them stay valid after a restart.
func TestFirstLoadsAgreeOnTheKey(t *testing.T) {
	const loads = 8
	path := filepath.Join(t.TempDir(), "server-metadata", KeyFileName)
	keys := make([][]byte, loads)
	errs := make([]error, loads)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range loads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			keys[i], errs[i] = loadKey(path)
		}()
	}
	close(start)
	wg.Wait()
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range loads {
		if errs[i] != nil {
			t.Fatalf("load %d: %v", i, errs[i])
		}
		if string(keys[i]) != string(kept) {
			t.Errorf("load %d answered a key the file does not keep", i)
		}
	}
}
