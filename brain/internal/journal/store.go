package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Record is one entry of a session journal.
type Record struct {
	// Sequence is the record's position in its session, dense from 1.
	Sequence uint64
	// Kind names the record (for example "turn_started").
	Kind string
	// RecordedAtMs is the commit time in Unix milliseconds. Append sets it
	// when zero and never lets it go backwards within a session.
	RecordedAtMs int64
	// Data is the record's JSON payload.
	Data json.RawMessage
	// Origin is the optional JSON provenance of the record (nil when absent).
	Origin json.RawMessage
}

// Page bounds used by Read when the caller passes zero.
const (
	DefaultPageRecords = 1000
	DefaultPageBytes   = 8 << 20
)

// DefaultBacklog is the live backlog of a subscription when Subscribe is
// given zero.
const DefaultBacklog = 1024

// Store is the journal of every session in one data directory. Each session
// has one dense sequence counter starting at 1. Implementations must pass
// the suite in journaltest.
type Store interface {
	// Append durably appends records to session's journal as a
	// compare-and-set: expectedNext must equal the session's next sequence,
	// else it returns an error wrapping ErrConflict and appends nothing.
	// records[i].Sequence is set to expectedNext+i and RecordedAtMs is
	// stamped. Append returns only once the records are durable. Appending
	// at expectedNext 1 creates the session.
	Append(ctx context.Context, session string, expectedNext uint64, records []Record) error
	// Next reports the next sequence of session (1 for a session with no
	// records), opening and recovering it if needed. A damaged session
	// answers an error wrapping ErrDamaged (a *DamagedError).
	Next(ctx context.Context, session string) (uint64, error)
	// Read returns records with Sequence > after, in order, at most
	// maxRecords of them and, except for a single oversized first record,
	// at most maxBytes of frames (zero selects the defaults).
	Read(ctx context.Context, session string, after uint64, maxRecords, maxBytes int) ([]Record, error)
	// Subscribe delivers every record committed after `after` in order:
	// first the records already committed, then live ones, with no gap and
	// no duplicate. backlog bounds the live records buffered for a slow
	// subscriber (zero selects DefaultBacklog); on overflow the
	// subscription ends with ErrLagged and the writer is never slowed.
	Subscribe(ctx context.Context, session string, after uint64, backlog int) (*Subscription, error)
	// Sessions lists the sessions on disk, healthy and damaged; a session
	// with no record (Next answers 1) is not listed.
	Sessions(ctx context.Context) ([]string, error)
	// WriteCheckpoint durably stores payload, an opaque projection of
	// session's records 1..through, replacing any earlier checkpoint.
	// through must not exceed the last committed sequence. A checkpoint of
	// a session that holds no record is refused with ErrInvalid, and
	// nothing is written.
	WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error
	// ReadCheckpoint returns the checkpoint of session. It answers an error
	// wrapping ErrNotFound when there is none or when it is damaged or
	// stale (the journal it covers changed); the caller then rebuilds from
	// the journal.
	ReadCheckpoint(ctx context.Context, session string) (through uint64, payload []byte, err error)
	// Delete removes a session and everything stored for it. Deleting a
	// session that does not exist is not an error.
	Delete(ctx context.Context, session string) error
	// Close flushes and releases the store.
	Close() error
}

// Errors reported by stores.
var (
	ErrConflict   = errors.New("journal: expected sequence does not match")
	ErrNotFound   = errors.New("journal: session not found")
	ErrDamaged    = errors.New("journal: session is damaged")
	ErrClosed     = errors.New("journal: store is closed")
	ErrOverloaded = errors.New("journal: writer queue is full")
	// ErrWrite wraps an append that failed because its records could not
	// be written or made durable (a full or failing disk). Nothing of
	// that append is acknowledged; later appends are tried again.
	ErrWrite = errors.New("journal: write failed")
	// ErrOutcomeUnknown wraps an append that was handed to durable
	// storage which failed before answering (a database connection lost
	// after the commit was sent): it may or may not have committed. Such
	// an error also wraps ErrOverloaded, since the caller may try again
	// once it has read the session back; any other ErrOverloaded means
	// the append was turned away and nothing of it was committed.
	ErrOutcomeUnknown = errors.New("journal: append outcome unknown")
	ErrLagged         = errors.New("journal: subscriber fell behind")
	ErrTooLarge       = errors.New("journal: record too large")
	ErrInvalid        = errors.New("journal: invalid argument")
)

// DamagedError says where a session's journal is damaged.
type DamagedError struct {
	Session string
	File    string
	Offset  int64
	Reason  string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("journal: session %s damaged at %s offset %d: %s", e.Session, e.File, e.Offset, e.Reason)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// Refusal answers an error reading msg that wraps ErrOverloaded (an
// append turned away, nothing of it committed, the caller may try again)
// without ErrOverloaded's own text, for stores and callers whose refusal
// is not a full queue: a lease lost to another node, for one.
func Refusal(msg string) error { return refusal(msg) }

type refusal string

func (r refusal) Error() string { return string(r) }

func (r refusal) Unwrap() error { return ErrOverloaded }
