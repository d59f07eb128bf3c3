package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the advisory lock key held while migrations run
// ("brainmig" as a big-endian int64).
const migrationLock int64 = 0x627261696e6d6967

// migrations are applied in order; migrations[i] brings the schema from
// version i to i+1. Released entries are never edited, only appended to.
var migrations = []string{
	// 1: journal, checkpoints, requests, modules, cluster, nodes, leases.
	`CREATE TABLE brain_cluster (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		key_fingerprint bytea
	);
	CREATE TABLE brain_sessions (
		session_id bytea PRIMARY KEY,
		next_seq bigint NOT NULL CHECK (next_seq > 1),
		last_ms bigint NOT NULL,
		epoch bigint NOT NULL
	);
	CREATE TABLE brain_records (
		session_id bytea NOT NULL,
		sequence bigint NOT NULL,
		kind bytea NOT NULL,
		recorded_at_ms bigint NOT NULL,
		data bytea,
		origin bytea,
		frame_bytes integer NOT NULL,
		PRIMARY KEY (session_id, sequence)
	);
	CREATE TABLE brain_checkpoints (
		session_id bytea PRIMARY KEY,
		through bigint NOT NULL,
		payload bytea NOT NULL
	);
	CREATE TABLE brain_requests (
		scope text NOT NULL,
		key bytea NOT NULL,
		digest bytea NOT NULL,
		hinted boolean NOT NULL,
		claim_id bytea NOT NULL,
		instance text NOT NULL,
		status integer,
		body bytea,
		claimed_at timestamptz NOT NULL,
		at timestamptz NOT NULL,
		PRIMARY KEY (scope, key)
	);
	CREATE TABLE brain_modules (
		id text PRIMARY KEY,
		bytes bytea NOT NULL,
		admitted_at timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE brain_nodes (
		node_id text PRIMARY KEY,
		instance text NOT NULL,
		public_url text NOT NULL,
		joined_at timestamptz NOT NULL,
		expires_at timestamptz NOT NULL
	);
	CREATE TABLE brain_leases (
		session_id bytea PRIMARY KEY,
		node_id text NOT NULL,
		epoch bigint NOT NULL,
		expires_at timestamptz NOT NULL
	);`,
	// 2: sealed credentials.
	`CREATE TABLE brain_secrets (
		session_id bytea NOT NULL,
		name text NOT NULL,
		sealed bytea NOT NULL,
		PRIMARY KEY (session_id, name)
	);`,
	// 3: admitted Tool modules, apart from the agentloop modules (one
	// id may be admitted as both, and each node compiles it as either).
	`CREATE TABLE brain_tool_modules (
		id text PRIMARY KEY,
		bytes bytea NOT NULL,
		admitted_at timestamptz NOT NULL DEFAULT now()
	);`,
}

// SchemaVersion is the schema version this binary writes.
var SchemaVersion = len(migrations)

// migrate brings the database to SchemaVersion, one migration per
// transaction, each of which takes the advisory lock (a transaction-level
// lock) before reading the version, so that of several nodes starting at
// once one migrates and the others wait and find the work done. The lock
// is never held outside a transaction: a node stopped while it migrates
// (SIGSTOP, a hung host) holds it only until the server ends its idle
// transaction (idle_in_transaction_session_timeout), and the nodes
// starting meanwhile go on. A database at a newer version is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, list []string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify("migrate", err, false)
	}
	defer conn.Release()
	for {
		done, err := migrateStep(ctx, conn.Conn(), list)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration of list, if any, in a
// transaction together with the version it reaches, and reports whether
// the schema was already at list's version.
func migrateStep(ctx context.Context, conn *pgx.Conn, list []string) (done bool, err error) {
	step := "migrate"
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// The lock is awaited for as long as ctx allows (another node may
		// be migrating, or be stopped in its migration until the server
		// ends it), not only for lock_timeout; the migration's own
		// statements keep lock_timeout.
		if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', '0', true), pg_advisory_xact_lock($1)", migrationLock); err != nil {
			step = "migrate: lock"
			return err
		}
		if _, err := tx.Exec(ctx, "RESET lock_timeout"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS brain_schema (
			singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
			version integer NOT NULL)`); err != nil {
			step = "migrate: schema table"
			return err
		}
		var version int
		err := tx.QueryRow(ctx, "SELECT version FROM brain_schema").Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			version = 0
		} else if err != nil {
			step = "migrate: read version"
			return err
		}
		if version > len(list) {
			return fmt.Errorf("%w: database is at version %d, this binary knows %d", ErrSchemaNewer, version, len(list))
		}
		if version == len(list) {
			done = true
			return nil
		}
		step = fmt.Sprintf("migrate to version %d", version+1)
		if _, err := tx.Exec(ctx, list[version]); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO brain_schema (version) VALUES ($1)
			ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`, version+1)
		return err
	})
	if errors.Is(err, ErrSchemaNewer) {
		return false, err
	}
	return done, classify(step, err, true)
}
