package pgstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of this package. ErrUnavailable, ErrOutcomeUnknown and ErrNotOwner wrap
// journal.ErrOverloaded, so the HTTP layer answers them 503 overloaded
// (retryable) like a full journal queue.
var (
	// ErrUnavailable: the database could not be reached or refused the
	// work for lack of resources; nothing was committed.
	ErrUnavailable = journal.Refusal("pgstore: database unavailable")
	// ErrOutcomeUnknown: the connection failed after a write was sent, so
	// it may or may not have committed. The caller must acknowledge
	// nothing and re-read the state from the database before acting again.
	ErrOutcomeUnknown = fmt.Errorf("pgstore: commit outcome unknown: %w: %w", journal.ErrOutcomeUnknown, ErrUnavailable)
	// ErrSchemaNewer: the database was migrated by a newer binary.
	ErrSchemaNewer = errors.New("pgstore: database schema is newer than this binary")
	// ErrKeyMismatch: the node's sealing key is not the cluster's.
	ErrKeyMismatch = errors.New("pgstore: sealing key does not match the database's key fingerprint")
	// ErrNotOwner: the node does not hold a live lease on the session
	// (never took it, let it expire, or another node took it over), so it
	// may not append to it. Nothing was committed; it wraps
	// journal.ErrOverloaded, so a request that met it is answered 503
	// (retryable), and its retry goes to the session's owner.
	ErrNotOwner = journal.Refusal("pgstore: this node does not hold the session's lease")
	// ErrLeaseHeld: another node holds a live lease on the session.
	ErrLeaseHeld = errors.New("pgstore: another node holds the session's lease")
	// ErrNodeIDInUse: Open found the node's id (Options.NodeID) held by
	// another process that is a live member: two processes under one id
	// would take each other's leases and membership.
	ErrNodeIDInUse = errors.New("pgstore: the node id is in use by another live node")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("pgstore: closed")
)

// classify maps a driver error of operation op to this package's errors.
// write says whether op may have changed the database: then a failure
// after the request was sent is ErrOutcomeUnknown, not ErrUnavailable,
// and so is an error by which the server, or a connection pooler in
// front of it, says it cannot tell whether the work committed (see
// uncertain).
func classify(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	if unsent(err) {
		// No connection was had for it: nothing was sent.
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case write && uncertain(err):
			return fmt.Errorf("%s: %w: %w", op, ErrOutcomeUnknown, err)
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"), // insufficient resources
			strings.HasPrefix(pgErr.Code, "57"), // operator intervention (shutdown)
			strings.HasPrefix(pgErr.Code, "40"), // serialization failure, deadlock
			pgErr.Code == "55P03",               // lock_timeout: a lock held by a stopped node
			pgErr.Code == "25006",               // read_only_sql_transaction: a standby, or a database set read-only
			pgErr.Code == "25P03":               // idle_in_transaction_session_timeout ended the transaction
			// The server reported the failure: the statement, and so its
			// implicit transaction, did not commit.
			return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
		}
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || pgconn.SafeToRetry(err) || !write {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrOutcomeUnknown, err)
}

// uncertain reports whether err is an error response that does not say
// the statement's transaction was rolled back, once the statement was
// sent (an error while connecting says nothing was):
//
//   - 40003 statement_completion_unknown;
//   - class 08, connection exception: PostgreSQL reports these only while
//     a connection is set up, so one in answer to a statement comes from
//     a connection pooler whose own connection to the server failed, and
//     the server may have committed what it had received;
//   - 57P02 crash_shutdown: the server ends every connection at once,
//     wherever it is, even after a commit was flushed but before it was
//     reported.
//
// Every other error response is the server's refusal: nothing of its
// transaction committed.
func uncertain(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return false
	}
	return pgErr.Code == "40003" || strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P02"
}

// refused reports whether err is the server's refusal of a statement or
// of a commit: its transaction was rolled back, so nothing of it
// committed and it may run again.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && !uncertain(err)
}
