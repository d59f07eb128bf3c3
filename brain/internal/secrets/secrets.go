package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/internal/fsutil"
)

var _ session.Secrets = (*Store)(nil)

// Errors of this package.
var (
	ErrSealed = errors.New("secrets: sealed file does not authenticate")
	ErrKey    = errors.New("secrets: bad key file")
)

const (
	magic   = "BRS1"
	keyName = "secrets.key"
	keySize = 32
)

// Store keeps sealed secrets under one server-metadata directory.
type Store struct {
	dir  string
	aead cipher.AEAD
	mu   sync.Mutex // serialises read-modify-write of one process

	// Until Sweep has run: the sessions sealed since Open, which it
	// keeps.
	fresh map[string]bool
	swept bool
}

// Open opens the store in dir (the data directory's server-metadata/),
// creating the directory and key on first use. It refuses a directory,
// key or sealed file another user owns or may write (ErrUnsafe, ErrKey).
func Open(dir string) (*Store, error) {
	if err := makeDirs(dir); err != nil {
		return nil, err
	}
	if err := checkSealedFiles(filepath.Join(dir, "sessions")); err != nil {
		return nil, err
	}
	keyPath := filepath.Join(dir, keyName)
	key, err := readKey(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, keySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("secrets: generate key: %w", err)
		}
		// Exclusive: a key another Open wrote first may already seal
		// secrets, and is kept.
		err := fsutil.WriteFileExclusive(keyPath, key, 0o600)
		if errors.Is(err, fs.ErrExist) {
			if key, err = readKey(keyPath); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s exists but names no file (a symbolic link to nothing?): %w", ErrKey, keyPath, err)
			}
			if err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, fmt.Errorf("secrets: write key: %w", err)
		}
		// The first start may find the directory made by another part
		// of the server: its entry is made durable with the key, so that
		// a journal written later never outlives the key that opens its
		// secrets.
		if err := fsutil.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("secrets: write key: %w", err)
		}
	} else if err != nil {
		return nil, err
	}
	if len(key) > keySize {
		return nil, fmt.Errorf("%w: %s holds more than %d bytes", ErrKey, keyPath, keySize)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("%w: %s holds %d bytes, want %d", ErrKey, keyPath, len(key), keySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return &Store{dir: dir, aead: aead, fresh: map[string]bool{}}, nil
}

// makeDirs creates dir and its sessions/ directory where they are
// missing (mode 0700) and fsyncs the parent of each one it creates, so
// that their entries are durable before anything is sealed in them: a
// journal written later never outlives the key that opens its secrets,
// nor a sealed file the directory that holds it. Each directory is
// checked (checkDir) before anything is made in it.
func makeDirs(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("secrets: open %s: %w", dir, err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "sessions")} {
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(d); serr != nil || !fi.IsDir() {
				return fmt.Errorf("secrets: open %s: %w", dir, err)
			}
		} else if err != nil {
			return fmt.Errorf("secrets: open %s: %w", dir, err)
		} else if err := fsutil.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("secrets: open %s: %w", dir, err)
		}
		if err := checkDir(d); err != nil {
			return err
		}
	}
	return nil
}

// readKey reads the key file at path, at most one byte more than a key.
// It refuses a key file other users may read or write (a copy restored
// with the wrong mode, say) or that another user owns (who may make it
// readable at any time): whoever reads it can unseal every credential.
// As PostgreSQL does with its data directory, the server does not start
// until the operator fixes the mode or the owner. The file is opened
// without waiting for the writer of a named pipe, and its mode and owner
// are those of the open file, so that a named pipe or a device in its
// place, even one put there a moment before, is refused rather than read
// without end.
func readKey(path string) ([]byte, error) {
	f, fi, err := fsutil.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w; it must be a file only its owner can read and write", ErrKey, err)
	}
	if errors.Is(err, fs.ErrPermission) {
		// A key another user owns and keeps from this one.
		if fi, serr := os.Stat(path); serr == nil {
			if oerr := checkOwner(ErrKey, path, fi); oerr != nil {
				return nil, oerr
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: key: %w", err)
	}
	defer f.Close()
	if m := fi.Mode(); m.Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v; it must be a file only its owner can read and write (chmod 600 %s)", ErrKey, path, m, path)
	}
	if err := checkOwner(ErrKey, path, fi); err != nil {
		return nil, err
	}
	key, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("secrets: read key %s: %w", path, err)
	}
	return key, nil
}

func (s *Store) path(session string) (string, error) {
	if !sessionName(session) {
		return "", fmt.Errorf("secrets: invalid session id %q", session)
	}
	return filepath.Join(s.dir, "sessions", session+".sealed"), nil
}

// sessionName reports whether id is safe as one path element.
func sessionName(id string) bool {
	if id == "" || len(id) > 200 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if c == '/' || c == '\\' || c == 0 {
			return false
		}
	}
	return true
}

func (s *Store) read(session string) (map[string][]byte, error) {
	p, err := s.path(session)
	if err != nil {
		return nil, err
	}
	// Opened without waiting: a named pipe put in place of the file after
	// Open checked it would otherwise hold the store's lock without end.
	f, _, err := fsutil.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: read %s: %w", session, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("secrets: read %s: %w", session, err)
	}
	return s.unseal(session, b)
}

// unseal decodes the sealed file b of session: magic, nonce, then the
// JSON object of its secrets sealed with the session id as additional
// data. Anything that does not authenticate is ErrSealed.
func (s *Store) unseal(session string, b []byte) (map[string][]byte, error) {
	ns := s.aead.NonceSize()
	if len(b) < len(magic)+ns || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: %s", ErrSealed, session)
	}
	plain, err := s.aead.Open(nil, b[len(magic):len(magic)+ns], b[len(magic)+ns:], []byte(session))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSealed, session)
	}
	m := map[string][]byte{}
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrSealed, session, err)
	}
	return m, nil
}

// Put seals value under name for session.
func (s *Store) Put(_ context.Context, session, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read(session)
	if err != nil {
		return err
	}
	m[name] = value
	plain, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("secrets: encode: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("secrets: nonce: %w", err)
	}
	out := append([]byte(magic), nonce...)
	out = s.aead.Seal(out, nonce, plain, []byte(session))
	p, _ := s.path(session)
	if !s.swept {
		s.fresh[session] = true
	}
	if err := fsutil.WriteFileAtomic(p, out, 0o600); err != nil {
		return fmt.Errorf("secrets: write %s: %w", session, err)
	}
	return nil
}

// Get answers the secret, or nil when there is none.
func (s *Store) Get(_ context.Context, session, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.read(session)
	if err != nil {
		return nil, err
	}
	return m[name], nil
}

// DeleteAll forgets every secret of session.
func (s *Store) DeleteAll(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.path(session)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("secrets: delete %s: %w", session, err)
	}
	return fsutil.SyncDir(filepath.Dir(p))
}
