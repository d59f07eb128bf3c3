package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/brain-in-go/brain/brain/internal/backend"
	"github.com/brain-in-go/brain/brain/internal/idem"
)

func init() {
	for _, scheme := range []string{"postgres", "postgresql"} {
		backend.Register(scheme, openBackend)
		backend.RegisterCheck(scheme, CheckURL)
	}
}

// CheckURL answers the error Open would answer for a database URL it
// cannot parse, without connecting. The error never quotes a password.
func CheckURL(databaseURL string) error {
	_, err := parseURL(databaseURL)
	return err
}

// maxSealingKeyFile bounds a sealing key file: a key is 32 to a few
// hundred bytes, never a file the server should read whole.
const maxSealingKeyFile = 4 << 10

// ErrSealingKey reports a sealing key file that cannot be used.
var ErrSealingKey = errors.New("pgstore: sealing key")

// ReadSealingKey reads a sealing key file: 64 hexadecimal digits (a
// trailing newline allowed), or at least 32 raw bytes. A file other users
// may read or write is refused (whoever reads it unseals every credential
// of the cluster), naming the file and the fix.
func ReadSealingKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealingKey, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealingKey, err)
	}
	if m := fi.Mode(); !m.IsRegular() || m.Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v; it must be a file only its owner can read and write (chmod 600 %s)", ErrSealingKey, path, m, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSealingKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealingKey, err)
	}
	if len(b) > maxSealingKeyFile {
		return nil, fmt.Errorf("%w: %s holds more than %d bytes", ErrSealingKey, path, maxSealingKeyFile)
	}
	if t := strings.TrimSpace(string(b)); len(t) == 64 {
		if k, err := hex.DecodeString(t); err == nil {
			return k, nil
		}
	}
	if len(b) < 32 {
		return nil, fmt.Errorf("%w: %s must hold 64 hex digits or at least 32 bytes", ErrSealingKey, path)
	}
	return b, nil
}

// openBackend opens the PostgreSQL backend of brain.New: the journal,
// idempotency answers, sealed credentials and reporter key are the
// cluster's.
func openBackend(ctx context.Context, opts backend.Options) (*backend.Backend, error) {
	if opts.SealingKeyFile == "" {
		return nil, errors.New("pgstore: a database URL needs a sealing key file (BRAIN_SEALING_KEY_FILE)")
	}
	key, err := ReadSealingKey(opts.SealingKeyFile)
	if err != nil {
		return nil, err
	}
	db, err := Open(ctx, Options{URL: opts.DatabaseURL, SealingKey: key, PublicURL: opts.PublicURL, LeaseDuration: opts.Lease, Fenced: true, KeepLeases: true,
		OnCommit: opts.Journal.OnCommit, OnDurable: opts.Journal.OnDurable})
	if err != nil {
		return nil, err
	}
	return &backend.Backend{
		Journal:     db.Journal(),
		Secrets:     db.Secrets(),
		ReporterKey: db.ReporterKey(),
		// Answers are the cluster's: a retry on any node replays them.
		// Derive is not used (see Requests).
		OpenRequests: func(o *idem.Options) (idem.Requests, error) {
			return db.Requests(o), nil
		},
		Ready:       db.Ping,
		Close:       db.Close,
		Ownership:   db,
		OnLeaseLost: db.OnLeaseLost,
		Route:       db.Route,
		LeaseEpoch:  db.LeaseEpoch,
		NodeGone:    db.NodeGone,
		Modules:     db,
		Tools:       db.Tools(),
		Passivated:  db.Passivated,
	}, nil
}
