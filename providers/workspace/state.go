package workspace

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// Phases of a binding's workspace.
const (
	phaseNew    = "new"    // set up, nothing allocated
	phaseReady  = "ready"  // directory allocated
	phaseFailed = "failed" // allocation failed; sticky until reset
	phaseLost   = "lost"   // directory vanished or was replaced; sticky until reset
)

// stateVersion is the layout of the state files this release writes, in
// their "version". A file without one was written by an earlier release:
// it is read the same way, its absent fields unknown (see doc.go). The
// version changes only when a provider that reads a file as this one
// does would act wrongly on it: a provider refuses a file of a later
// version, rather than misread it.
const stateVersion = 1

// record is the persisted state of one binding.
type record struct {
	Version     int             `json:"version,omitempty"`
	Key         string          `json:"key"`
	SessionID   string          `json:"session_id"`
	Environment string          `json:"environment"`
	Binding     uint64          `json:"binding_sequence"`
	Config      json.RawMessage `json:"configuration"`
	// Dir is the workspace directory's name under <root>/workspaces,
	// chosen at setup and replaced by reset.
	Dir   string `json:"dir"`
	Phase string `json:"phase"`
	// Mark, Handle, Ino and Birth identify the allocated directory
	// (identity), so a directory re-created at the same path is not
	// mistaken for ours. A state file of an earlier release holds no mark
	// or handle.
	Mark   string `json:"mark,omitempty"`
	Handle string `json:"handle,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Birth  int64  `json:"birth,omitempty"` // creation time in ns, 0 when unknown
	// Dev is the device number of the allocated directory. It is not
	// read: the providers of earlier releases compare it, and would take
	// every workspace for replaced in a state file without it.
	Dev     uint64    `json:"dev,omitempty"`
	Error   string    `json:"error,omitempty"` // failed or lost: why
	Created time.Time `json:"created"`
}

// store keeps one JSON file per binding under dir.
type store struct{ dir string }

const stateSuffix = ".json"

// path is the state file of key (see fsutil.KeyFileName: identifiers of
// 128 characters make a key too long to name a file by in base64url).
func (s store) path(key string) string {
	return filepath.Join(s.dir, fsutil.KeyFileName(key, stateSuffix))
}

// legacyPath is the state file the first releases named key by: its
// base64url form whatever its length. For a key of 176 to 187 bytes that
// name is not path's (the temporary file of a save beside it would be too
// long), and load gives the file path's name.
func (s store) legacyPath(key string) string {
	return filepath.Join(s.dir, base64.RawURLEncoding.EncodeToString([]byte(key))+stateSuffix)
}

// writeState writes a state file atomically.
var writeState = fsutil.WriteFileAtomic

// save writes rec atomically: temporary file, fsync, rename, directory fsync.
func (s store) save(rec *record) error {
	rec.Version = stateVersion
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode binding state: %w", err)
	}
	if err := writeState(s.path(rec.Key), data, 0o600); err != nil {
		return fmt.Errorf("save binding state: %w", err)
	}
	return nil
}

func (s store) syncDir() error {
	if err := fsutil.SyncDir(s.dir); err != nil {
		return fmt.Errorf("sync state directory: %w", err)
	}
	return nil
}

// remove deletes the state of key; a missing file is not an error.
func (s store) remove(key string) error {
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove binding state: %w", err)
	}
	return s.syncDir()
}

// load reads every binding's state, and removes the temporary files of
// saves that a provider killed part way left.
func (s store) load() ([]*record, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("read binding states: %w", err)
	}
	var out []*record
	earlier := map[string]string{} // key: its file of an earlier name
	for _, e := range entries {
		name := e.Name()
		if fsutil.IsTemp(name) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, stateSuffix) || strings.HasPrefix(name, ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			return nil, fmt.Errorf("read binding state %s: %w", name, err)
		}
		rec, err := s.decode(name, data)
		if err != nil {
			return nil, fmt.Errorf("binding state %s: %w", filepath.Join(s.dir, name), err)
		}
		if path := filepath.Join(s.dir, name); path != s.path(rec.Key) {
			earlier[rec.Key] = path
		}
		out = append(out, rec)
	}
	// Once every file decoded, so that a start refused for a damaged file
	// renames none.
	for key, path := range earlier {
		if err := s.rename(key, path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rename gives the state file of key found at from, an earlier name, the
// name path gives it, where saves replace it and teardown removes it: left
// at its earlier name, it would bring back a binding torn down. A key with
// files at both names is refused: which one is current is not known.
func (s store) rename(key, from string) error {
	to := s.path(key)
	switch _, err := os.Lstat(to); {
	case err == nil:
		return fmt.Errorf("binding state %s: %s holds the state of the same binding too", from, to)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("binding state %s: %w", from, err)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("rename binding state: %w", err)
	}
	return s.syncDir()
}

// decode decodes the state file called name and checks what the provider
// acts on: the key the file is named by (path's name, or legacyPath's), a
// phase it writes, and a workspace directory of the form newDirName makes
// (the directory it removes on reset and teardown: an empty or relative
// name would reach the workspaces root or outside it). A damaged or foreign file is
// refused, never acted on.
func (s store) decode(name string, data []byte) (*record, error) {
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if rec.Version > stateVersion {
		return nil, fmt.Errorf("version %d: written by a later release, which this one (version %d) cannot read", rec.Version, stateVersion)
	}
	if path := filepath.Join(s.dir, name); rec.Key == "" || (s.path(rec.Key) != path && s.legacyPath(rec.Key) != path) {
		return nil, fmt.Errorf("key %q does not match the file name", rec.Key)
	}
	switch rec.Phase {
	case phaseNew, phaseReady, phaseFailed, phaseLost:
	default:
		return nil, fmt.Errorf("unknown phase %q", rec.Phase)
	}
	if !validDirName(rec.Dir) {
		return nil, fmt.Errorf("workspace directory %q is not a name the provider makes", rec.Dir)
	}
	return &rec, nil
}

// validDirName reports whether name is 32 lowercase hex digits, as
// newDirName makes.
func validDirName(name string) bool {
	b, err := hex.DecodeString(name)
	return err == nil && len(b) == 16 && hex.EncodeToString(b) == name
}
