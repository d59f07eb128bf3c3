//go:build unix

package brain_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain"
)

// A data directory others may write is refused before anything is made
// in it: whoever may rename its entries could put a token of their own
// in place of operator.token.
func TestDataDirWritableByOthersRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		dir := filepath.Join(t.TempDir(), "brain-data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		srv, err := brain.New(context.Background(), brain.Config{DataDir: dir, TokenFile: filepath.Join(dir, "operator.token")})
		if err == nil {
			srv.Close(context.Background())
			t.Fatalf("mode %v: New served a data directory others may write", mode)
		}
		if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "chmod 700") {
			t.Errorf("mode %v: error %q does not name the directory and how to fix it", mode, err)
		}
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if len(entries) != 0 {
			t.Errorf("mode %v: refused data directory holds %d entries, want it as it was found", mode, len(entries))
		}
	}
	// Once fixed, the same directory is served.
	dir := filepath.Join(t.TempDir(), "brain-data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := brain.New(context.Background(), brain.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("data directory of mode 0755: %v", err)
	}
	srv.Close(context.Background())
}
