package pgstore

import (
	"context"
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

// migrate brings the database to SchemaVersion under an advisory lock, so
// that of several nodes starting at once one migrates and the others wait
// and find the work done. A database at a newer version is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, list []string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return classify("migrate", err, false)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return classify("migrate: lock", err, false)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS brain_schema (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		version integer NOT NULL)`); err != nil {
		return classify("migrate: schema table", err, true)
	}
	var version int
	err = conn.QueryRow(ctx, "SELECT version FROM brain_schema").Scan(&version)
	if err == pgx.ErrNoRows {
		version = 0
	} else if err != nil {
		return classify("migrate: read version", err, false)
	}
	if version > len(list) {
		return fmt.Errorf("%w: database is at version %d, this binary knows %d", ErrSchemaNewer, version, len(list))
	}
	for v := version; v < len(list); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, list[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO brain_schema (version) VALUES ($1)
				ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`, v+1)
			return err
		})
		if err != nil {
			return classify(fmt.Sprintf("migrate to version %d", v+1), err, true)
		}
	}
	return nil
}
