package e2e

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// readFileMode reads a file and checks its permission bits.
func readFileMode(path string, mode fs.FileMode) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm() != mode {
		return "", fmt.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), mode)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// assertNotInFiles fails if any file under dir contains secret.
func assertNotInFiles(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
}
