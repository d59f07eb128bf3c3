package envbind

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFileOfWrongSizeIsRefused: a reporter key file that does not hold
// exactly one key (cut short, or with more after it) is refused with
// ErrKey, an error naming the file and telling its size truly, and the
// file is left as it was rather than replaced by a new key that would
// void the reporter tokens handed out.
func TestKeyFileOfWrongSizeIsRefused(t *testing.T) {
	for _, c := range []struct {
		size int
		says string
	}{
		{5, "holds 5 bytes, want 32"},
		{keySize + 1, fmt.Sprintf("more than %d bytes", keySize)},
		{1 << 20, fmt.Sprintf("more than %d bytes", keySize)},
	} {
		t.Run(fmt.Sprint(c.size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), KeyFileName)
			content := bytes.Repeat([]byte{7}, c.size)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadKey(path)
			if !errors.Is(err, ErrKey) {
				t.Fatalf("loadKey of a %d-byte key file = %v, want ErrKey", c.size, err)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q does not name %s and say %q", msg, path, c.says)
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, content) {
				t.Fatalf("the refused load changed the key file (%v)", err)
			}
		})
	}
}
