package pythonuv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// bindingFileVersion is the version of a binding file.
const bindingFileVersion = 1

// bindingFile is the durable record of one attached binding: one JSON file
// per binding in the state directory, written whole and synced before its
// setup is answered, removed before its detach or teardown is answered.
type bindingFile struct {
	Version int    `json:"version"`
	Key     string `json:"key"`
}

// stateStore keeps the attached bindings in a directory, so that a
// provider started again serves the bindings set up before.
type stateStore struct {
	dir string
}

// openState creates dir if needed and reads the bindings recorded in it.
// A file that is not a binding record (damaged, or not ours) is an error
// naming it: the operator inspects it rather than the provider forgetting
// a binding.
func openState(dir string) (*stateStore, map[string]struct{}, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("pythonuv: state directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, nil, fmt.Errorf("pythonuv: state directory: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("pythonuv: state directory: %w", err)
	}
	bindings := map[string]struct{}{}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(abs, name)
		if fsutil.IsTemp(name) {
			_ = os.Remove(path) // a write that a crash cut short
			continue
		}
		if !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			return nil, nil, fmt.Errorf("pythonuv: state directory holds %s, which is not a binding file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("pythonuv: state: %w", err)
		}
		key, err := decodeBindingFile(name, data)
		if err != nil {
			return nil, nil, fmt.Errorf("pythonuv: state: %s: %w", path, err)
		}
		bindings[key] = struct{}{}
	}
	return &stateStore{dir: abs}, bindings, nil
}

// errNotBindingFile reports a state file that is not the record of a
// binding: damaged, of another version, or not named after its key.
var errNotBindingFile = fmt.Errorf("not a binding file of version %d (damaged?)", bindingFileVersion)

// decodeBindingFile answers the binding key that data, the content of the
// state file called name, records, or errNotBindingFile.
func decodeBindingFile(name string, data []byte) (string, error) {
	var bf bindingFile
	if err := json.Unmarshal(data, &bf); err != nil || bf.Version != bindingFileVersion || bf.Key == "" || bindingFileName(bf.Key) != name {
		return "", errNotBindingFile
	}
	return bf.Key, nil
}

// bindingFileName is the file name of binding key: a digest, since a key
// may hold any character.
func bindingFileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// attach records key durably.
func (s *stateStore) attach(key string) error {
	data, err := json.Marshal(bindingFile{Version: bindingFileVersion, Key: key})
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(s.dir, bindingFileName(key)), data, 0o600); err != nil {
		return fmt.Errorf("pythonuv: record binding %s: %w", key, err)
	}
	return nil
}

// release removes key's record durably; a record already gone is fine.
func (s *stateStore) release(key string) error {
	err := os.Remove(filepath.Join(s.dir, bindingFileName(key)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fsutil.SyncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("pythonuv: release binding %s: %w", key, err)
	}
	return nil
}
