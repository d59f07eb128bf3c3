package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/brain-in-go/brain/brain/internal/backend"
	"github.com/brain-in-go/brain/brain/internal/idem"
)

func init() {
	backend.Register("postgres", openBackend)
	backend.Register("postgresql", openBackend)
}

// ReadSealingKey reads a sealing key file: 64 hexadecimal digits (a
// trailing newline allowed), or at least 32 raw bytes.
func ReadSealingKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pgstore: sealing key: %w", err)
	}
	if t := strings.TrimSpace(string(b)); len(t) == 64 {
		if k, err := hex.DecodeString(t); err == nil {
			return k, nil
		}
	}
	if len(b) < 32 {
		return nil, errors.New("pgstore: sealing key file must hold 64 hex digits or at least 32 bytes")
	}
	return b, nil
}

// openBackend opens the PostgreSQL backend of brain.New. The journal,
// sealed credentials and reporter key are the cluster's; idempotency
// answers are still kept in the node's data directory.
func openBackend(ctx context.Context, opts backend.Options) (*backend.Backend, error) {
	if opts.SealingKeyFile == "" {
		return nil, errors.New("pgstore: a database URL needs a sealing key file (BRAIN_SEALING_KEY_FILE)")
	}
	key, err := ReadSealingKey(opts.SealingKeyFile)
	if err != nil {
		return nil, err
	}
	db, err := Open(ctx, Options{URL: opts.DatabaseURL, SealingKey: key, PublicURL: opts.PublicURL})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.DataDir, "requests"), 0o700); err != nil {
		db.Close()
		return nil, err
	}
	return &backend.Backend{
		Journal:     db.Journal(),
		Secrets:     db.Secrets(),
		ReporterKey: db.ReporterKey(),
		OpenRequests: func(o *idem.Options) (*idem.Store, error) {
			return idem.Open(filepath.Join(opts.DataDir, "requests", "requests.log"), o)
		},
		Ready: db.Ping,
		Close: db.Close,
	}, nil
}
