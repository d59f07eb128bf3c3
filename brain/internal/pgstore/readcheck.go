package pgstore

import (
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// readPage reads a page of a session's records ($1 session, after $2, at
// most $3 records and $4 bytes of frames, but always the first one)
// together with the session row's next_seq, in one snapshot, so that the
// page can be checked against the head: a session without records
// answers one row of NULLs but next_seq (NULL too without a session row).
// A frame's size is measured from the bytes the row holds (frameSize),
// not taken from its frame_bytes column: a row damaged to understate it
// would otherwise let one page carry any number of bytes.
const readPage = `SELECT sequence, kind, recorded_at_ms, data, origin, next_seq
	FROM (SELECT (SELECT next_seq FROM brain_sessions WHERE session_id = $1) AS next_seq) s
	LEFT JOIN LATERAL (
		SELECT sequence, kind, recorded_at_ms, data, origin FROM (
			SELECT sequence, kind, recorded_at_ms, data, origin, sum(` + frameSize + `) OVER (ORDER BY sequence) AS total
			FROM brain_records WHERE session_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3
		) q WHERE total <= $4 OR sequence = $2 + 1
	) p ON true
	ORDER BY sequence`

// frameSize is the size of a brain_records row's frame in FileStore's
// format (journal.FrameSize), from the lengths of its bytes: an 8-byte
// header, 24 fixed bytes of payload, the kind and data, and the origin
// with its 4-byte length when there is one. octet_length reads a stored
// value's length without reading the value.
const frameSize = `(32 + octet_length(kind) + coalesce(octet_length(data), 0) + coalesce(4 + octet_length(origin), 0))::bigint`

// errNoRecords marks readPage's row of a page without records.
var errNoRecords = errors.New("pgstore: no records")

// checkPage answers the records of a page read after `after` up to the
// first that the session's appends could not have written (rows damaged
// or removed in the database behind Brain's back), and refuses, as
// journal.ErrDamaged, a page that starts with one: so a reader gets every
// record before the damage, and the read that reaches it fails. Append
// checks every record as FileStore does (a kind, JSON data and origin)
// and numbers them densely from 1 to next_seq-1, so a record that fails
// those checks, a sequence out of its place, or a page that ends before
// the head with nothing read is damage, never handed to the engine or a
// subscriber as the session's history. next is the session row's
// next_seq, nil without a row.
func checkPage(session string, after uint64, next *int64, page []journal.Record) ([]journal.Record, error) {
	damaged := func(seq uint64, reason string) error {
		return &journal.DamagedError{Session: session, File: "brain_records", Offset: int64(seq), Reason: reason}
	}
	if next == nil {
		if len(page) > 0 {
			return nil, damaged(page[0].Sequence, "records of a session without a session row")
		}
		return page, nil
	}
	if *next < 2 {
		// The schema holds next_seq above 1: a row that says otherwise is
		// no head to read against.
		return nil, damaged(0, fmt.Sprintf("next sequence %d", *next))
	}
	head := uint64(*next)
	if len(page) == 0 {
		if after+1 < head {
			return nil, damaged(after+1, fmt.Sprintf("record %d is missing (the next sequence is %d)", after+1, head))
		}
		return page, nil
	}
	for i := range page {
		r := &page[i]
		want := after + 1 + uint64(i)
		var err error
		switch {
		case r.Sequence != want:
			err = damaged(want, fmt.Sprintf("record %d is missing (found %d in its place)", want, r.Sequence))
		case r.Sequence >= head:
			err = damaged(r.Sequence, fmt.Sprintf("record %d is past the next sequence %d", r.Sequence, head))
		default:
			if cerr := journal.CheckAppend(session, page[i:i+1]); cerr != nil {
				err = damaged(r.Sequence, fmt.Sprintf("record %d: %v", r.Sequence, cerr))
			}
		}
		if err != nil {
			if i == 0 {
				return nil, err
			}
			return page[:i], nil
		}
	}
	return page, nil
}
