package pgstore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// A sealing key file other users may read or write is refused with
// ErrSealingKey naming the file and the fix; once chmod 600 it reads
// again. A directory, a short file and an oversized one are refused too.
func TestReadSealingKeyRefusesSharedFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "sealing.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0xab}, 32)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
		if err := os.Chmod(key, mode); err != nil {
			t.Fatal(err)
		}
		_, err := pgstore.ReadSealingKey(key)
		if !errors.Is(err, pgstore.ErrSealingKey) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %v: %v; want ErrSealingKey naming %s and chmod 600", mode, err, key)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(key, mode); err != nil {
			t.Fatal(err)
		}
		if got, err := pgstore.ReadSealingKey(key); err != nil || !bytes.Equal(got, want) {
			t.Errorf("mode %v: %x, %v; want the key", mode, got, err)
		}
	}
	short := filepath.Join(dir, "short.key")
	big := filepath.Join(dir, "big.key")
	_ = os.WriteFile(short, []byte("abc"), 0o600)
	_ = os.WriteFile(big, bytes.Repeat([]byte("k"), 1<<20), 0o600)
	for _, p := range []string{dir, short, big, filepath.Join(dir, "absent.key")} {
		if _, err := pgstore.ReadSealingKey(p); !errors.Is(err, pgstore.ErrSealingKey) {
			t.Errorf("%s: %v; want ErrSealingKey", p, err)
		}
	}
}
