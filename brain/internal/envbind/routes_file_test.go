//go:build unix

package envbind

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// loadRoutesWithin runs LoadRoutes on path and fails the test if it
// waited on a named pipe there.
func loadRoutesWithin(t *testing.T, path string) error {
	t.Helper()
	return pipetest.Within(t, path, 5*time.Second, func() error {
		_, err := LoadRoutes(path)
		return err
	})
}

// TestRoutesFileThatIsAPipeIsRefused: a routes file that is a named pipe
// stops Check with an error naming it, instead of holding the server's
// start until something writes to the pipe.
func TestRoutesFileThatIsAPipeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	pipetest.Make(t, path)
	err := loadRoutesWithin(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("LoadRoutes of a named pipe = %v, want an error naming %s as not a regular file", err, path)
	}
	c := Config{RoutesFile: path}
	err = c.Check()
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Check with a named pipe for its routes file = %v, want an error naming %s", err, path)
	}
}

// TestRoutesFileTooLargeIsRefused: a routes file longer than
// MaxRoutesFileBytes is refused with an error naming it, not read into
// memory whole; one of exactly that length is read.
func TestRoutesFileTooLargeIsRefused(t *testing.T) {
	dir := t.TempDir()
	// A valid routes object padded with spaces to the bound.
	obj := `{"docker":{"endpoint":"http://127.0.0.1:9000"}}`
	fits := filepath.Join(dir, "fits.json")
	if err := os.WriteFile(fits, []byte(obj+strings.Repeat(" ", MaxRoutesFileBytes-len(obj))), 0o600); err != nil {
		t.Fatal(err)
	}
	routes, err := LoadRoutes(fits)
	if err != nil || routes["docker"].Endpoint != "http://127.0.0.1:9000" {
		t.Fatalf("LoadRoutes of a file of MaxRoutesFileBytes = %v, %v; want its route", routes, err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(obj+strings.Repeat(" ", MaxRoutesFileBytes+1-len(obj))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadRoutes(big)
	if err == nil || errors.Is(err, errRoutesFile) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("LoadRoutes of a file one byte over MaxRoutesFileBytes = %v, want an error naming %s as too large", err, big)
	}
}
