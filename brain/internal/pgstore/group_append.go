package pgstore

import (
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/jackc/pgx/v5"
)

// appendOp is an append to an existing session as the group commit may
// combine it with other sessions' appends into one statement (see
// combinedAppend). Its results are those of the one-session statement:
// whether head and the lease check passed, the session's previous
// last_ms and the statement's time, from which the stamps follow.
type appendOp struct {
	session  string
	expected int64
	epoch    int64
	records  []journal.Record
	times    []int64 // encoded (see encodeTimes)

	head, lease bool
	old         *int64
	now         int64
}

// combinedSQL is the append statement for many sessions at once, each
// with its own compare-and-set and fence, and a result row per session:
// the statement of appendSQL with the session, expected next, epoch and
// last encoded time of each append in arrays (a, $1–$5) and the records
// of all of them in arrays (r, $6–$12: the append's index and the
// record's position in it, then as appendSQL), $13 the node when fenced.
// The sessions are distinct, so each session row is joined once.
func combinedSQL(fenced bool) string {
	leaseCTE, leaseCond, leaseOK := "", "", "true"
	if fenced {
		leaseCTE = `lease AS (
		SELECT a.i FROM a JOIN brain_leases l ON l.session_id = a.session_id AND l.node_id = $13 AND l.epoch = a.epoch
			AND l.expires_at > statement_timestamp()
	),
	`
		leaseCond = ` AND s.epoch = a.epoch AND a.i IN (SELECT i FROM lease)`
		leaseOK = `a.i IN (SELECT i FROM lease)`
	}
	return `WITH a AS (
		SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::integer[], $4::bigint[], $5::bigint[])
			WITH ORDINALITY AS a(session_id, expected, n, epoch, m, i)
	),
	` + leaseCTE + `old AS (
		SELECT a.i, s.last_ms FROM a JOIN brain_sessions s ON s.session_id = a.session_id AND s.next_seq = a.expected
	),
	head AS (
		UPDATE brain_sessions s SET next_seq = a.expected + a.n, last_ms = greatest(s.last_ms, ` + stamp("a.m") + `)
		FROM a WHERE s.session_id = a.session_id AND s.next_seq = a.expected` + leaseCond + `
		RETURNING a.i
	),
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT a.session_id, a.expected + r.o - 1, r.k, greatest(old.last_ms, ` + stamp("r.m") + `), r.d, r.og, r.fb
		FROM unnest($6::integer[], $7::integer[], $8::bytea[], $9::bigint[], $10::bytea[], $11::bytea[], $12::integer[])
			AS r(ai, o, k, m, d, og, fb)
		JOIN a ON a.i = r.ai JOIN old ON old.i = r.ai
		WHERE r.ai IN (SELECT i FROM head)
	)
	SELECT a.i, a.i IN (SELECT i FROM head), ` + leaseOK + `, old.last_ms, ` + nowMs + `
	FROM a LEFT JOIN old ON old.i = a.i ORDER BY a.i`
}

var (
	combinedPlain  = combinedSQL(false)
	combinedFenced = combinedSQL(true)
)

// combinedAppend answers the statement and arguments of one append
// statement for ops (distinct sessions, each op.app set).
func combinedAppend(ops []*groupOp, fenced bool, node string) (string, []any) {
	n := len(ops)
	sessions := make([][]byte, n)
	expected := make([]int64, n)
	counts := make([]int32, n)
	epochs := make([]int64, n)
	lasts := make([]int64, n)
	var ai, pos, frames []int32
	var kinds, data, origins [][]byte
	var times []int64
	for i, op := range ops {
		a := op.app
		sessions[i], expected[i], counts[i], epochs[i] = []byte(a.session), a.expected, int32(len(a.records)), a.epoch
		lasts[i] = a.times[len(a.times)-1]
		for k := range a.records {
			r := &a.records[k]
			ai, pos = append(ai, int32(i+1)), append(pos, int32(k+1))
			kinds = append(kinds, []byte(r.Kind))
			times = append(times, a.times[k])
			var d []byte
			if len(r.Data) > 0 {
				d = r.Data
			}
			data = append(data, d)
			origins = append(origins, r.Origin)
			frames = append(frames, int32(journal.FrameSize(r)))
		}
	}
	args := []any{sessions, expected, counts, epochs, lasts, ai, pos, kinds, times, data, origins, frames}
	if fenced {
		return combinedFenced, append(args, node)
	}
	return combinedPlain, args
}

// readCombined reads the combined statement's rows into ops' results. A
// failure is left to the batch's Close, which reports it.
func readCombined(br pgx.BatchResults, ops []*groupOp) {
	rows, err := br.Query()
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var head, lease bool
		var old *int64
		var now int64
		if err := rows.Scan(&i, &head, &lease, &old, &now); err != nil {
			return
		}
		if i < 1 || int(i) > len(ops) {
			continue
		}
		a := ops[i-1].app
		a.head, a.lease, a.old, a.now = head, lease, old, now
		ops[i-1].combined = true
	}
	if rows.Err() == nil && len(ops) > 0 {
		for _, op := range ops {
			if !op.combined {
				op.err = fmt.Errorf("pgstore: the combined append answered no row for session %s", op.app.session)
			}
		}
	}
}
