//go:build unix

package brain_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/internal/pipetest"
)

// newWithTokenFile runs brain.New with path as its TokenFile and fails
// the test if it waited on a named pipe there.
func newWithTokenFile(t *testing.T, path string) error {
	t.Helper()
	return pipetest.Within(t, path, 30*time.Second, func() error {
		srv, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), TokenFile: path})
		if err == nil {
			srv.Close(context.Background())
		}
		return err
	})
}

// TestTokenFileThatIsAPipeIsRefused: an operator token file that is a
// named pipe stops New with an error naming it, instead of holding the
// server's start until something writes to the pipe.
func TestTokenFileThatIsAPipeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "operator.token")
	pipetest.Make(t, path)
	err := newWithTokenFile(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("New with a named pipe for its token file = %v, want an error naming %s as not a regular file", err, path)
	}
}

// TestTokenFileTooLargeIsRefused: an operator token file far longer than
// any token is refused with an error naming it, not read whole and
// served.
func TestTokenFileTooLargeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "operator.token")
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	err := newWithTokenFile(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("New with a token file of 1 MiB = %v, want an error naming %s as too large", err, path)
	}
}
