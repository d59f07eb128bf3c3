//go:build unix

package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// TestProvidersFileThatIsAPipeIsRefused: a providers file that is a named
// pipe is refused as invalid, naming it, instead of holding the server's
// start until something writes to the pipe.
func TestProvidersFileThatIsAPipeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.json")
	pipetest.Make(t, path)
	err := pipetest.Within(t, path, 10*time.Second, func() error {
		_, err := ReadFile(path)
		return err
	})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadFile of a named pipe = %v, want ErrInvalid naming %s as not a regular file", err, path)
	}
}

// TestProvidersFileThatIsNoFileIsRefused: a directory or a device given
// as the providers file is refused as invalid, saying it is not a regular
// file, rather than read as an empty file, as endless zeros or failing
// with a read error.
func TestProvidersFileThatIsNoFileIsRefused(t *testing.T) {
	paths := []string{t.TempDir()}
	for _, dev := range []string{"/dev/null", "/dev/zero"} {
		if fi, err := os.Stat(dev); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			paths = append(paths, dev)
		}
	}
	for _, path := range paths {
		_, err := ReadFile(path)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile(%s) = %v, want ErrInvalid naming it as not a regular file", path, err)
		}
	}
}

// TestProvidersFileAtTheBound: a file of MaxFileBytes is read; one byte
// more is refused as invalid, naming the file and the bound.
func TestProvidersFileAtTheBound(t *testing.T) {
	dir := t.TempDir()
	obj := `{"providers":[]}`
	fits := filepath.Join(dir, "fits.json")
	if err := os.WriteFile(fits, []byte(obj+strings.Repeat(" ", MaxFileBytes-len(obj))), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := ReadFile(fits); err != nil || f.Providers == nil {
		t.Fatalf("ReadFile of a file of MaxFileBytes = %v, %v; want it read", f, err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(obj+strings.Repeat(" ", MaxFileBytes+1-len(obj))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(big)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("ReadFile of a file one byte over MaxFileBytes = %v, want ErrInvalid naming %s and the bound", err, big)
	}
}
