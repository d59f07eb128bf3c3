package pgstore

import "github.com/brain-in-go/brain/brain/internal/journal"

// The append statement, in two forms: create (expectedNext 1) and next
// (an existing session), each for one record or many, plain or fenced.
// One statement in its own implicit transaction, or in the group
// commit's (see group.go), so one round trip and one commit:
//
//   - head (next) moves next_seq and last_ms if next_seq is the expected
//     one: the compare-and-set, re-checked on the newest row version if a
//     concurrent append changed it, so of two racing appends one fails;
//     old reads the session's last_ms from the same snapshot (when head
//     succeeds, no append came between). create inserts the session row
//     instead, doing nothing when it exists;
//   - lease (fenced appends) checks the node's lease row: live, with the
//     node's epoch (see leaseRow);
//   - ins writes the rows if head succeeded, each stamped as stamp says.
//
// Stamps: a record's recorded_at_ms is the largest of the session's last
// one and of the records' own times up to it, a zero time meaning the
// statement's time. The caller computes, for each record, the largest
// non-zero time up to it (at least 0) and marks whether a zero time came
// before it by sending -m-1 instead of m; stamp turns that into the time,
// and the statement answers the session's previous last_ms and its own
// time, from which the caller computes the same stamps. The statement
// does no per-record aggregation, so it costs little more than the
// inserts.
//
// The NOTIFY for other nodes is sent after the commit, by notifyLater: a
// NOTIFY inside the append would serialize every commit of the database
// (PostgreSQL holds a database-wide lock from queueing notifications
// until the commit is flushed), which defeats group commit.
const (
	nowMs = `(extract(epoch FROM statement_timestamp()) * 1000)::bigint`
	// leaseRow, for an existing session, reads the lease row without
	// locking it: the fence is the session row's epoch (head's condition),
	// which every takeover raises in the statement that takes the lease,
	// after waiting for the row lock of an append in flight.
	leaseRow = `SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $8 AND epoch = $9 AND expires_at > statement_timestamp()`
	// appendLeaseCreate: a session row does not exist yet to carry the
	// epoch, so the lease row is share-locked instead.
	appendLeaseCreate = `lease AS (
		SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $8 AND epoch = $9 AND expires_at > statement_timestamp()
		FOR SHARE
	)`
)

// stamp is the SQL of the time of an encoded record time m (see above).
func stamp(m string) string {
	return `CASE WHEN ` + m + ` < 0 THEN greatest(-` + m + ` - 1, ` + nowMs + `) ELSE ` + m + ` END`
}

// fence answers the parts of an append statement that check the lease:
// the count it reports, the CTE, the condition on head, and the epoch a
// new session row starts with.
func fence(existing, fenced bool) (ok, cte, cond, epoch string) {
	if !fenced {
		return "1::bigint", "", "", "0"
	}
	if existing {
		// No CTE: the lease row is read once, in head's condition, and
		// again only to tell a lost lease from a conflict when head
		// failed (an init plan in a CASE runs only when reached).
		return "CASE WHEN EXISTS (SELECT 1 FROM head) THEN 1::bigint ELSE (SELECT count(*) FROM (" + leaseRow + ") l) END", "",
			" AND epoch = $9 AND EXISTS (" + leaseRow + ")", "$9"
	}
	return "(SELECT count(*) FROM lease)", appendLeaseCreate + ",\n", " AND EXISTS (SELECT 1 FROM lease)", "$9"
}

// appendOneSQL is the one-record form (most appends): $1 session, $2
// expected next, $3 kind, $4 encoded time, $5 data, $6 origin, $7 frame
// bytes, and for fenced appends $8 node and $9 epoch. The record's stamp
// is the session's new last_ms, which head returns.
func appendOneSQL(existing, fenced bool) string {
	leaseOK, leaseCTE, leaseCond, epoch := fence(existing, fenced)
	tail := `,
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT $1, $2, $3, h.last_ms, $5, $6, $7 FROM head h
	)
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, (SELECT last_ms FROM head), 0::bigint`
	if existing {
		return "WITH " + leaseCTE + `head AS (
		UPDATE brain_sessions SET next_seq = $2 + 1, last_ms = greatest(last_ms, ` + stamp("$4::bigint") + `)
		WHERE session_id = $1 AND next_seq = $2` + leaseCond + `
		RETURNING last_ms
	)` + tail
	}
	return "WITH " + leaseCTE + `head AS (
		INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT $1, 2, greatest(0, ` + stamp("$4::bigint") + `), ` + epoch + `
		WHERE true` + leaseCond + `
		ON CONFLICT (session_id) DO NOTHING
		RETURNING last_ms
	)` + tail
}

// appendSQL is the form for many records, with arrays: $3 kinds, $4
// encoded times, $5 data, $6 origins, $7 frame bytes.
func appendSQL(existing, fenced bool) string {
	leaseOK, leaseCTE, leaseCond, epoch := fence(existing, fenced)
	last := stamp("($4::bigint[])[cardinality($4::bigint[])]")
	ins := func(old, from string) string {
		return `,
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT $1, $2 + u.o - 1, u.k, greatest(` + old + `, ` + stamp("u.m") + `), u.d, u.og, u.fb
		FROM ` + from + `unnest($3::bytea[], $4::bigint[], $5::bytea[], $6::bytea[], $7::integer[]) WITH ORDINALITY AS u(k, m, d, og, fb, o)
		WHERE EXISTS (SELECT 1 FROM head)
	)`
	}
	if existing {
		return "WITH old AS (SELECT last_ms FROM brain_sessions WHERE session_id = $1 AND next_seq = $2),\n" + leaseCTE + `head AS (
		UPDATE brain_sessions SET next_seq = $2 + cardinality($3::bytea[]), last_ms = greatest(last_ms, ` + last + `)
		WHERE session_id = $1 AND next_seq = $2` + leaseCond + `
		RETURNING 1
	)` + ins("old.last_ms", "old, ") + `
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, (SELECT last_ms FROM old), ` + nowMs
	}
	return "WITH " + leaseCTE + `head AS (
		INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT $1, 1 + cardinality($3::bytea[]), greatest(0, ` + last + `), ` + epoch + `
		WHERE true` + leaseCond + `
		ON CONFLICT (session_id) DO NOTHING
		RETURNING 1
	)` + ins("0", "") + `
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, 0::bigint, ` + nowMs
}

var (
	appendOneCreate       = appendOneSQL(false, false)
	appendOneNext         = appendOneSQL(true, false)
	appendOneCreateFenced = appendOneSQL(false, true)
	appendOneNextFenced   = appendOneSQL(true, true)
	appendCreate          = appendSQL(false, false)
	appendNext            = appendSQL(true, false)
	appendCreateFenced    = appendSQL(false, true)
	appendNextFenced      = appendSQL(true, true)
)

// encodeTimes answers the encoded times of records (see the append
// statement): for each, the largest non-zero time up to it, at least 0,
// as -m-1 once a zero time came.
func encodeTimes(records []journal.Record) []int64 {
	out := make([]int64, len(records))
	var m int64
	zero := false
	for i := range records {
		t := records[i].RecordedAtMs
		if t == 0 {
			zero = true
		} else if t > m {
			m = t
		}
		out[i] = m
		if zero {
			out[i] = -m - 1
		}
	}
	return out
}

// decodeStamp is the Go side of stamp: the time of encoded time m in a
// statement whose time was now, not below old.
func decodeStamp(old, m, now int64) int64 {
	if m < 0 {
		m = max(-m-1, now)
	}
	return max(old, m)
}
