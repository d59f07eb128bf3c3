package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// sealedExt ends the name of every sealed file.
const sealedExt = ".sealed"

// Sweep removes what no session can use from the sessions/ directory:
// the sealed file of every session exists does not report, and the
// temporary files of seals a crash cut short. It answers the sessions
// whose sealed files it removed. A create killed after its secrets were
// sealed and before its first record was durable leaves such a file;
// without a sweep the credentials in it would stay on disk for a session
// that does not exist.
//
// Sweep runs once, when the store opens; later calls do nothing. The
// sessions sealed through this Store before it are never removed,
// whatever exists reports, since a session being created is sealed
// before its journal holds it. Sessions sealed by anything else are not
// known, so only one Store may write the directory (the data directory's
// lock sees to that). Files other than sealed and temporary ones are left
// alone. Removing is best effort: the errors of the files that could not
// be removed are joined in the error, and the rest are removed all the
// same.
func (s *Store) Sweep(ctx context.Context, exists func(session string) bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.swept {
		return nil, nil
	}
	s.swept = true
	fresh := s.fresh
	s.fresh = nil
	dir := filepath.Join(s.dir, "sessions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("secrets: sweep: %w", err)
	}
	var removed []string
	var errs []error
	changed := false
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		id, sealed := strings.CutSuffix(name, sealedExt)
		switch {
		case fsutil.IsTemp(name):
		case sealed && sessionName(id) && !fresh[id] && !exists(id):
		default:
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("secrets: sweep: %w", err))
			continue
		}
		changed = true
		if sealed && !fsutil.IsTemp(name) {
			removed = append(removed, id)
		}
	}
	if changed {
		if err := fsutil.SyncDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("secrets: sweep: %w", err))
		}
	}
	return removed, errors.Join(errs...)
}
