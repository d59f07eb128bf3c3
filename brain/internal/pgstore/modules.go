package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrModuleNotFound: no admitted module has the id.
var ErrModuleNotFound = errors.New("pgstore: module not found")

// ErrModuleDamaged: the stored bytes do not hash to their id.
var ErrModuleDamaged = errors.New("pgstore: stored module does not match its id")

// PutModule stores the bytes of an admitted agentloop module under their
// SHA-256 (hex), which it answers. Storing the same bytes again is a no-op.
// Each node compiles the bytes into its own local cache.
func (db *DB) PutModule(ctx context.Context, b []byte) (string, error) {
	return db.putModule(ctx, "brain_modules", b)
}

// Module answers the bytes of an admitted module, checked against its id.
func (db *DB) Module(ctx context.Context, id string) ([]byte, error) {
	return db.module(ctx, "brain_modules", id)
}

// ToolModules is the store of admitted Tool modules (table
// brain_tool_modules), with the methods of DB's agentloop module store:
// a Tool admitted on one node runs on every node.
type ToolModules struct{ db *DB }

// Tools answers the store of admitted Tool modules.
func (db *DB) Tools() ToolModules { return ToolModules{db} }

// PutModule is DB.PutModule for Tool modules.
func (t ToolModules) PutModule(ctx context.Context, b []byte) (string, error) {
	return t.db.putModule(ctx, "brain_tool_modules", b)
}

// Module is DB.Module for Tool modules.
func (t ToolModules) Module(ctx context.Context, id string) ([]byte, error) {
	return t.db.module(ctx, "brain_tool_modules", id)
}

// SharedModule is DB.SharedModule for Tool modules
// (loophost.Options.SharedTools).
func (t ToolModules) SharedModule(ctx context.Context, id string) ([]byte, bool, error) {
	return shared(t.Module(ctx, id))
}

// putModule and module serve both module tables; table is one of the two
// names above, never input.
func (db *DB) putModule(ctx context.Context, table string, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	_, err := db.pool.Exec(ctx, `INSERT INTO `+table+` (id, bytes) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, b)
	if err != nil {
		return "", classify("put module", err, true)
	}
	return id, nil
}

func (db *DB) module(ctx context.Context, table, id string) ([]byte, error) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	var b []byte
	err := db.pool.QueryRow(ctx, `SELECT bytes FROM `+table+` WHERE id = $1`, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrModuleNotFound, id)
	}
	if err != nil {
		return nil, classify("module", err, false)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != id {
		return nil, fmt.Errorf("%w: %s", ErrModuleDamaged, id)
	}
	return b, nil
}

// MaxModuleIDs bounds a page of ModuleIDs.
const MaxModuleIDs = 1000

// ModuleIDs lists a page of the admitted modules: the ids that sort
// after `after` ("" for the first page), in id order, at most limit of
// them (MaxModuleIDs when limit is not in 1..MaxModuleIDs). The next
// page starts after the last id of this one, so walking every module
// holds one page at a time; a page shorter than limit is the last.
func (db *DB) ModuleIDs(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 || limit > MaxModuleIDs {
		limit = MaxModuleIDs
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT id FROM brain_modules WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, classify("module ids", err, false)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, classify("module ids", err, false)
}

// SharedModule is Module for loophost.Options.Shared: unknown is found
// false, not an error; damaged bytes are an error.
func (db *DB) SharedModule(ctx context.Context, id string) ([]byte, bool, error) {
	return shared(db.Module(ctx, id))
}

func shared(b []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, ErrModuleNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}
