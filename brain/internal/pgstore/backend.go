package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
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
