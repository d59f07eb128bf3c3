package pgstore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrSealed: a stored credential does not authenticate under the key.
var ErrSealed = errors.New("pgstore: sealed credential does not authenticate")

// deriveKey derives a 32-byte key for one purpose from the sealing key.
func deriveKey(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// ReporterKey answers the key environment reporter tokens are derived
// from: the same on every node sharing the sealing key, so that a
// reporter token verifies on any of them.
func (db *DB) ReporterKey() []byte { return deriveKey(db.opts.SealingKey, "brain reporter key v1") }

// Secrets keeps sessions' credentials in brain_secrets, one row per
// secret, sealed with AES-256-GCM under a key derived from the sealing
// key; the row's sealed value is a random 12-byte nonce followed by the
// ciphertext and tag, with "<session id> NUL <name>" as additional data.
// It implements the session engine's Secrets interface. The secrets of a
// session whose creation never committed its first append are removed
// by the nodes once its lease ran out (see the package documentation).
type Secrets struct {
	db   *DB
	aead cipher.AEAD
}

// Secrets answers the sealed-credential store.
func (db *DB) Secrets() *Secrets {
	block, err := aes.NewCipher(deriveKey(db.opts.SealingKey, "brain secrets v1"))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Secrets{db: db, aead: aead}
}

func secretAD(session, name string) []byte {
	return append(append([]byte(session), 0), name...)
}

// Put seals and stores one secret, replacing any earlier value. When the
// DB is Fenced, it also requires this node's live lease on the session
// (ErrNotOwner otherwise, nothing stored), as an append does.
func (s *Secrets) Put(ctx context.Context, session, name string, value []byte) error {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, value, secretAD(session, name))
	epoch, err := s.db.journal.fence(session)
	if err != nil {
		return err
	}
	ctx, cancel := s.db.opCtx(ctx)
	defer cancel()
	if !s.db.opts.Fenced {
		_, err := s.db.send.Exec(ctx, `INSERT INTO brain_secrets (session_id, name, sealed) VALUES ($1, $2, $3)
			ON CONFLICT (session_id, name) DO UPDATE SET sealed = EXCLUDED.sealed`, []byte(session), name, sealed)
		return classify("put secret", err, true)
	}
	var owned bool
	err = s.db.send.QueryRow(ctx, `WITH `+secretsFence+`, put AS (
			INSERT INTO brain_secrets (session_id, name, sealed) SELECT $1, $4, $5 WHERE EXISTS (SELECT 1 FROM ok)
			ON CONFLICT (session_id, name) DO UPDATE SET sealed = EXCLUDED.sealed)
		SELECT EXISTS (SELECT 1 FROM ok)`, []byte(session), s.db.opts.NodeID, epoch, name, sealed).Scan(&owned)
	if err != nil {
		return classify("put secret", err, true)
	}
	if !owned {
		return fmt.Errorf("%w: session %s epoch %d", ErrNotOwner, session, epoch)
	}
	return nil
}

// secretsFence is the CTE ok of a fenced write of secrets ($1 session, $2
// node, $3 epoch): one row when this node holds the live lease of epoch,
// which the session row, if any, carries. Both rows are share-locked, the
// lease row first, as a takeover (which updates both) locks them, so that
// a takeover waits for the write, and the write for a takeover in flight,
// whose new epoch it then finds. A node that lost the lease, when another
// node created the session under the same id meanwhile, neither replaces
// nor removes the new session's secrets.
const secretsFence = `lease AS (
		SELECT 1 FROM brain_leases
		WHERE session_id = $1 AND node_id = $2 AND epoch = $3 AND expires_at > statement_timestamp()
		FOR SHARE
	), ok AS (
		SELECT 1 FROM lease WHERE coalesce((SELECT epoch FROM brain_sessions WHERE session_id = $1 FOR SHARE) = $3, true)
	)`

// Get answers the secret, or nil when there is none. A value that does
// not authenticate is an error, never treated as absent.
func (s *Secrets) Get(ctx context.Context, session, name string) ([]byte, error) {
	ctx, cancel := s.db.opCtx(ctx)
	defer cancel()
	var sealed []byte
	err := s.db.pool.QueryRow(ctx, `SELECT sealed FROM brain_secrets WHERE session_id = $1 AND name = $2`, []byte(session), name).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, classify("get secret", err, false)
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("%w: %s", ErrSealed, session)
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], secretAD(session, name))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSealed, session)
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}

// DeleteAll forgets every secret of session. When the DB is Fenced, it
// also requires this node's live lease on the session (ErrNotOwner
// otherwise, nothing removed), unless the session has no secrets: then
// there is nothing to remove, as after Journal.Delete, which removes them
// with the journal, and DeleteAll succeeds with or without the lease.
func (s *Secrets) DeleteAll(ctx context.Context, session string) error {
	ctx, cancel := s.db.opCtx(ctx)
	defer cancel()
	if !s.db.opts.Fenced {
		_, err := s.db.send.Exec(ctx, `DELETE FROM brain_secrets WHERE session_id = $1`, []byte(session))
		return classify("delete secrets", err, true)
	}
	var owned, left bool
	epoch, err := s.db.journal.fence(session)
	if errors.Is(err, ErrNotOwner) {
		err = s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM brain_secrets WHERE session_id = $1)`, []byte(session)).Scan(&left)
		if err != nil {
			return classify("delete secrets", err, false)
		}
	} else if err != nil {
		return err
	} else {
		err = s.db.send.QueryRow(ctx, `WITH `+secretsFence+`, del AS (
				DELETE FROM brain_secrets WHERE session_id = $1 AND EXISTS (SELECT 1 FROM ok))
			SELECT EXISTS (SELECT 1 FROM ok), EXISTS (SELECT 1 FROM brain_secrets WHERE session_id = $1)`,
			[]byte(session), s.db.opts.NodeID, epoch).Scan(&owned, &left)
		if err != nil {
			return classify("delete secrets", err, true)
		}
	}
	if !owned && left {
		if epoch == 0 {
			return fmt.Errorf("%w: session %s", ErrNotOwner, session)
		}
		return fmt.Errorf("%w: session %s epoch %d", ErrNotOwner, session, epoch)
	}
	return nil
}
