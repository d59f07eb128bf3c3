//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// TestServeRefusesFilesThatArePipes: a providers file or an environment
// routes file that is a named pipe is a refused setting, saying so, not a
// start held until something writes to the pipe. A providers file is
// refused as a flag (exit 2, naming it); a routes file by brain.New.
func TestServeRefusesFilesThatArePipes(t *testing.T) {
	for _, c := range []struct{ flag, name, says string }{
		{"--providers-file", "providers.json", "--providers-file"},
		{"--environment-routes-file", "routes.json", "routes"},
	} {
		t.Run(c.flag, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name)
			pipetest.Make(t, path)
			type result struct {
				code   int
				stderr string
				served bool
			}
			r := pipetest.Within(t, path, 30*time.Second, func() result {
				code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", c.flag, path)
				return result{code, stderr, served}
			})
			wantCode := r.code != 0
			if c.flag == "--providers-file" {
				wantCode = r.code == 2
			}
			if r.served || !wantCode || !strings.Contains(r.stderr, c.says) || !strings.Contains(r.stderr, "not a regular file") {
				t.Errorf("served %v, exit %d, stderr %q; want a refusal saying %s is not a regular file", r.served, r.code, r.stderr, c.says)
			}
		})
	}
}
