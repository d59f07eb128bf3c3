package fsutil

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key is named by its base64url form while that name and the temporary
// file beside it fit a file name, by its SHA-256 beyond; every name is
// written and read back on the file system, and distinct keys get
// distinct names.
func TestKeyFileName(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]string{}
	for n := 1; n <= 400; n++ {
		key := strings.Repeat("k", n)
		name := KeyFileName(key, ".json")
		if other, dup := seen[name]; dup {
			t.Fatalf("keys of %d and %d bytes share the name %s", n, len(other), name)
		}
		seen[name] = key
		short := base64.RawURLEncoding.EncodeToString([]byte(key)) + ".json"
		if strings.HasPrefix(name, HashedKeyPrefix) == (name == short) {
			t.Fatalf("key of %d bytes named %q", n, name)
		}
		if n < 100 && name != short {
			t.Fatalf("key of %d bytes named %q, want %q", n, name, short)
		}
		path := filepath.Join(dir, name)
		if err := WriteFileAtomic(path, []byte(key), 0o600); err != nil {
			t.Fatalf("key of %d bytes: %v", n, err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != key {
			t.Fatalf("key of %d bytes read back %q %v", n, b, err)
		}
	}
}
