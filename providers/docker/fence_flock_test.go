//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package docker

import (
	"errors"
	"path/filepath"
	"testing"
)

// The whole-file lock that stands for the byte-range ones on macOS and the
// BSDs keeps them apart as they are kept: shared holds go together, an
// exclusive one waits for none of them and excludes every other, within
// one process as between two, and a release frees the file.
func TestFlockFileExcludes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), fenceName)
	a, err := flockFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := flockFile(path, false)
	if err != nil {
		t.Fatalf("a second shared hold: %v", err)
	}
	if _, err := flockFile(path, true); !errors.Is(err, errFenceBusy) {
		t.Fatalf("an exclusive hold while shared ones last: %v, want errFenceBusy", err)
	}
	a()
	if _, err := flockFile(path, true); !errors.Is(err, errFenceBusy) {
		t.Fatalf("an exclusive hold while one shared lasts: %v, want errFenceBusy", err)
	}
	b()
	x, err := flockFile(path, true)
	if err != nil {
		t.Fatalf("an exclusive hold once every shared one is released: %v", err)
	}
	for _, exclusive := range []bool{false, true} {
		if _, err := flockFile(path, exclusive); !errors.Is(err, errFenceBusy) {
			t.Fatalf("a hold (exclusive %v) while an exclusive one lasts: %v, want errFenceBusy", exclusive, err)
		}
	}
	x()
	if release, err := flockFile(path, false); err != nil {
		t.Fatalf("a shared hold once the exclusive one is released: %v", err)
	} else {
		release()
	}
}
