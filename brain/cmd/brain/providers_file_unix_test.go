//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// TestServeRefusesProvidersFileThatIsAPipe: a providers file that is a
// named pipe is a refused setting (exit 2 naming the flag and saying what
// is wrong), not a start held until something writes to the pipe.
func TestServeRefusesProvidersFileThatIsAPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.json")
	pipetest.Make(t, path)
	type result struct {
		code   int
		stderr string
		served bool
	}
	r := pipetest.Within(t, path, 30*time.Second, func() result {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--providers-file", path)
		return result{code, stderr, served}
	})
	if r.served || r.code != 2 || !strings.Contains(r.stderr, "--providers-file") || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("served %v, exit %d, stderr %q; want exit 2 naming --providers-file and the pipe as not a regular file", r.served, r.code, r.stderr)
	}
}

// TestServeRefusesRoutesFileThatIsAPipe: an environment routes file that
// is a named pipe is refused, saying so, not a start held until something
// writes to the pipe.
func TestServeRefusesRoutesFileThatIsAPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes.json")
	pipetest.Make(t, path)
	type result struct {
		code   int
		stderr string
		served bool
	}
	r := pipetest.Within(t, path, 30*time.Second, func() result {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--environment-routes-file", path)
		return result{code, stderr, served}
	})
	if r.served || r.code == 0 || !strings.Contains(r.stderr, "routes") || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("served %v, exit %d, stderr %q; want a refusal saying the routes file is not a regular file", r.served, r.code, r.stderr)
	}
}
