package docker

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// Binding phases, persisted in the state file.
const (
	// phaseNew: set up, nothing allocated yet.
	phaseNew = "new"
	// phaseAllocating: the resource names were committed and creation
	// started; after a restart the outcome is unknown.
	phaseAllocating = "allocating"
	// phaseReady: container and volume exist.
	phaseReady = "ready"
	// phaseFailed: the allocation failed; it stays failed (sticky).
	phaseFailed = "failed"
	// phaseDeleted: torn down. It marks a binding in memory between its
	// teardown and its removal from the provider, so that an operation
	// that found it answers unavailable; its file is removed. Files of
	// earlier versions kept it as a tombstone: it is read and removed.
	phaseDeleted = "deleted"
)

const stateVersion = 1

// bindingState is the durable record of one binding, one JSON file per
// binding in the state directory (see doc.go).
type bindingState struct {
	Version         int    `json:"version"`
	Key             string `json:"key"`
	SessionID       string `json:"session_id"`
	Environment     string `json:"environment"`
	BindingSequence uint64 `json:"binding_sequence"`
	// Resource names the container and the volume ("brain-<Resource>").
	Resource string `json:"resource"`
	Profile  string `json:"profile"`
	ImageID  string `json:"image_id"`
	// Chown: the image's /workspace, or something in it, is not owned by
	// the profile's user, so allocation gives the volume and everything
	// in it to that user with a one-shot container.
	Chown bool `json:"chown,omitempty"`
	// ChownFor is the user Chown was decided for (ownerFor): the
	// profile's user at setup, when its workspace was writable. A
	// profile changed before the allocation (a provider restarted with
	// another user, or a workspace made writable) has Chown decided again
	// for the user the container is made with, so that a volume nothing
	// has written yet belongs to the user who writes it. Files of earlier
	// versions lack it: the allocation decides again.
	ChownFor string `json:"chown_for,omitempty"`
	// ChownWhole: Chown was decided for the volume and everything in it
	// (the files the image's /workspace puts there), not for the
	// volume's root alone. Files of earlier versions lack it, and their
	// Chown may leave the image's files to another user than the
	// profile's: the allocation decides again, and the volume of such a
	// binding already allocated is given wholly to its user at its first
	// execute (settleOwner), which then sets it.
	ChownWhole bool      `json:"chown_whole,omitempty"`
	Phase      string    `json:"phase"`
	Error      string    `json:"error,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// resourceName is the name of the binding's container and volume.
func (st *bindingState) resourceName() string { return "brain-" + st.Resource }

func newResourceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stateStore keeps binding states as files named by the base64url binding
// key. Writes are atomic: temp file, fsync, rename (or link, for the
// exclusive create), fsync of the directory.
type stateStore struct {
	dir string
}

func openStateStore(dir string) (*stateStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("docker: state directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("docker: state directory: %w", err)
	}
	return &stateStore{dir: abs}, nil
}

const stateSuffix = ".json"

// path is the state file of key (see fsutil.KeyFileName: identifiers of
// 128 characters make a key too long to name a file by in base64url).
func (s *stateStore) path(key string) string {
	return filepath.Join(s.dir, fsutil.KeyFileName(key, stateSuffix))
}

// errStateExists reports an exclusive create of a binding that has a file.
var errStateExists = errors.New("binding state already exists")

// create writes st only if no state exists for its key.
func (s *stateStore) create(st *bindingState) error {
	return s.write(st, true)
}

// put replaces st's file.
func (s *stateStore) put(st *bindingState) error {
	return s.write(st, false)
}

func (s *stateStore) write(st *bindingState, exclusive bool) error {
	st.Version = stateVersion
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("docker: encode state: %w", err)
	}
	data = append(data, '\n')
	final := s.path(st.Key)
	if exclusive {
		// An atomic exclusive create of a complete file.
		if err := fsutil.WriteFileExclusive(final, data, 0o600); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return errStateExists
			}
			return fmt.Errorf("docker: create state: %w", err)
		}
		return nil
	}
	if err := fsutil.WriteFileAtomic(final, data, 0o600); err != nil {
		return fmt.Errorf("docker: write state: %w", err)
	}
	return nil
}

func (s *stateStore) syncDir() error {
	if err := fsutil.SyncDir(s.dir); err != nil {
		return fmt.Errorf("docker: sync state directory: %w", err)
	}
	return nil
}

// get reads the state of key; ok is false when there is none.
func (s *stateStore) get(key string) (*bindingState, bool, error) {
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("docker: read state: %w", err)
	}
	st, err := decodeState(data)
	if err == nil && st.Key != key {
		err = fmt.Errorf("the file holds the state of %q", st.Key)
	}
	if err != nil {
		return nil, false, fmt.Errorf("docker: state of %q: %w", key, err)
	}
	return st, true, nil
}

// decodeState decodes a state file and checks what the provider acts on:
// a resource id of the form newResourceID makes (it names the container
// the provider stops and execs in), a known phase, and a binding key. A
// damaged or foreign file is refused, never acted on.
func decodeState(data []byte) (*bindingState, error) {
	var st bindingState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("state version %d, want %d", st.Version, stateVersion)
	}
	if st.Key == "" {
		return nil, errors.New("state without a binding key")
	}
	if !validResourceID(st.Resource) {
		return nil, fmt.Errorf("state resource %q is not a resource id", st.Resource)
	}
	switch st.Phase {
	case phaseNew, phaseAllocating, phaseReady, phaseFailed, phaseDeleted:
	default:
		return nil, fmt.Errorf("state phase %q is unknown", st.Phase)
	}
	return &st, nil
}

// validResourceID reports whether id is 16 lowercase hex digits, as
// newResourceID makes.
func validResourceID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && len(b) == 8 && hex.EncodeToString(b) == id
}

// remove deletes the state of key; a missing file is not an error.
func (s *stateStore) remove(key string) error {
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("docker: remove state: %w", err)
	}
	return s.syncDir()
}

// list reads every state file. Files that do not decode are reported in
// the error but do not hide the others.
func (s *stateStore) list() ([]*bindingState, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("docker: list states: %w", err)
	}
	var out []*bindingState
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, stateSuffix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, err := decodeState(data)
		if err == nil && s.path(st.Key) != filepath.Join(s.dir, name) {
			err = fmt.Errorf("key %q does not match the file name", st.Key)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}
