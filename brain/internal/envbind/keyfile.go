package envbind

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// ErrKey reports a reporter key file that cannot be used.
var ErrKey = errors.New("envbind: bad reporter key file")

// keySize is the size of the reporter server key.
const keySize = 32

// loadKey reads the key file, or creates it with fresh random bytes.
func loadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("envbind: no key file named")
	}
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("envbind: key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("envbind: key directory: %w", err)
	}
	// Exclusive: when another process created the key first, keep its key.
	if err := fsutil.WriteFileExclusive(path, key, 0o600); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("envbind: write key file: %w", err)
		}
		// Read once more: a name that exists yet cannot be read (a
		// symbolic link to nothing) is an error, not a race to wait out.
		if key, err = readKey(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s exists but names no file (a symbolic link to nothing?): %w", ErrKey, path, err)
		}
		return key, err
	}
	return key, nil
}

// readKey reads the key file at path. Whoever can read the key can forge
// reporter tokens, and whoever owns or may write it can swap it for one
// they know: as ssh does with a private key, a key file that is not a
// regular file only the process's effective user owns and can read and
// write is refused with ErrKey, saying how to put it right. The open does
// not wait for the writer of a named pipe, and the mode and owner checked
// are those of the open file.
func readKey(path string) ([]byte, error) {
	f, fi, err := fsutil.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	if err != nil {
		return nil, fmt.Errorf("envbind: key file: %w", err)
	}
	defer f.Close()
	if err := checkKeyFile(path, fi); err != nil {
		return nil, err
	}
	b, err := fsutil.ReadBounded(f, path, keySize)
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w; want %d bytes", ErrKey, err, keySize)
	}
	if err != nil {
		return nil, fmt.Errorf("envbind: key file %s: %w", path, err)
	}
	if len(b) != keySize {
		return nil, fmt.Errorf("%w: %s holds %d bytes, want %d", ErrKey, path, len(b), keySize)
	}
	return b, nil
}

// checkKeyFile refuses fi, the regular key file at path, unless the
// process's effective user owns it and neither group nor others may read
// or write it.
func checkKeyFile(path string, fi fs.FileInfo) error {
	if m := fi.Mode(); m.Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %v; it must be a file only its owner can read and write (chmod 600 %s)", ErrKey, path, m, path)
	}
	if err := fsutil.CheckOwner(path, fi); err != nil {
		return fmt.Errorf("%w: %w", ErrKey, err)
	}
	return nil
}

// LoadKey reads the reporter key file at path, or creates it with fresh
// random bytes and mode 0600 (keeping another process's key when it won
// the race).
func LoadKey(path string) ([]byte, error) { return loadKey(path) }
