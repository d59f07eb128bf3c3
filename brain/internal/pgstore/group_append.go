package pgstore

import (
	"fmt"
	"strconv"

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
	// rides are the idempotency claims and answers whose records the
	// append carries: their rows are written by the same statement.
	rides []rideWrite

	head, lease bool
	old         *int64
	now         int64
	answered    [][]byte // ids of the claims whose answers to existing rows were written
}

// rideWrite is a riding claim's claim or answer record in an append.
type rideWrite struct {
	c      *RequestClaim
	answer bool
}

// combinedSQL is the append statement for many sessions at once, each
// with its own compare-and-set and fence, and a result row per session:
// the statement of appendSQL with the session, expected next, epoch and
// last encoded time of each append in arrays (a, $1–$5) and the records
// of all of them in arrays (r, $6–$12: the append's index and the
// record's position in it, then as appendSQL), $13 the node when fenced.
// The sessions are distinct, so each session row is joined once.
//
// head moves each session row whose next_seq is the expected one, in the
// statement's snapshot (o, whose last_ms it answers: no append came
// between) and in the newest row version (the compare-and-set), and,
// when fenced, whose epoch is the append's and whose lease row (read,
// not locked) names this node with that epoch, unexpired. The records
// are joined to head alone, which answers everything their rows need.
// The lease row is read again only for an append whose head failed, to
// tell a lost lease from a conflict (a subquery in a CASE runs only when
// reached). Every lookup is by primary key, so the statement's cost
// does not grow with the number of sessions or leases.
//
// With rides, the statement also writes the idempotency rows whose
// records the appends carry, each only if its append's head (the
// compare-and-set and the fence) passed: claims inserts the claim rows
// (with their answer when the same append carries it), a plain INSERT,
// so that a key another request claimed meanwhile fails the whole
// statement (unique violation) and nothing of it commits; answers writes
// the answers of claims committed before, and the result row names the
// claims whose answers it wrote (an append may carry several). Their
// arrays follow the node's parameter (see rideArgs).
func combinedSQL(fenced, rides bool) string {
	lease := `(SELECT l.epoch FROM brain_leases l WHERE l.session_id = a.session_id AND l.node_id = $13
			AND l.expires_at > statement_timestamp()) = a.epoch`
	leaseCond, leaseOK := "", "true"
	if fenced {
		leaseCond = ` AND s.epoch = a.epoch AND ` + lease
		leaseOK = `CASE WHEN h.i IS NOT NULL THEN true ELSE coalesce(` + lease + `, false) END`
	}
	rideCTE, rideOK := "", ""
	if rides {
		p := 13
		if fenced {
			p = 14
		}
		n := func(k int) string { return "$" + strconv.Itoa(p+k) }
		rideCTE = `,
	claims AS (
		INSERT INTO brain_requests (scope, key, digest, hinted, claim_id, instance, status, body, claimed_at, at)
		SELECT c.s, c.k, c.d, false, c.id, ` + n(7) + `::text, c.st, c.b, now(), now()
		FROM unnest(` + n(0) + `::integer[], ` + n(1) + `::text[], ` + n(2) + `::bytea[], ` + n(3) + `::bytea[], ` + n(4) + `::bytea[], ` +
			n(5) + `::integer[], ` + n(6) + `::bytea[]) AS c(ai, s, k, d, id, st, b)
		WHERE c.ai IN (SELECT i FROM head)
	),
	answers AS (
		UPDATE brain_requests q SET status = w.st, body = w.b, at = greatest(now(), q.claimed_at)
		FROM unnest(` + n(8) + `::integer[], ` + n(9) + `::text[], ` + n(10) + `::bytea[], ` + n(11) + `::bytea[], ` +
			n(12) + `::integer[], ` + n(13) + `::bytea[]) AS w(ai, s, k, id, st, b)
		WHERE q.scope = w.s AND q.key = w.k AND q.claim_id = w.id AND q.status IS NULL AND w.ai IN (SELECT i FROM head)
		RETURNING w.ai, w.id
	)`
		rideOK = `, array(SELECT w.id FROM answers w WHERE w.ai = a.i)`
	}
	return `WITH a AS (
		SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::integer[], $4::bigint[], $5::bigint[])
			WITH ORDINALITY AS a(session_id, expected, n, epoch, m, i)
	),
	head AS (
		UPDATE brain_sessions s SET next_seq = a.expected + a.n, last_ms = greatest(s.last_ms, ` + stamp("a.m") + `)
		FROM a JOIN brain_sessions o ON o.session_id = a.session_id AND o.next_seq = a.expected
		WHERE s.session_id = a.session_id AND s.next_seq = a.expected` + leaseCond + `
		RETURNING a.i, a.session_id, a.expected, o.last_ms AS old
	),
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT h.session_id, h.expected + r.o - 1, r.k, greatest(h.old, ` + stamp("r.m") + `), r.d, r.og, r.fb
		FROM unnest($6::integer[], $7::integer[], $8::bytea[], $9::bigint[], $10::bytea[], $11::bytea[], $12::integer[])
			AS r(ai, o, k, m, d, og, fb)
		JOIN head h ON h.i = r.ai
	)` + rideCTE + `
	SELECT a.i, h.i IS NOT NULL, ` + leaseOK + `, h.old, ` + nowMs + rideOK + `
	FROM a LEFT JOIN head h ON h.i = a.i ORDER BY a.i`
}

var (
	combinedPlain       = combinedSQL(false, false)
	combinedFenced      = combinedSQL(true, false)
	combinedPlainRides  = combinedSQL(false, true)
	combinedFencedRides = combinedSQL(true, true)
)

// rideArgs answers the arguments of the rides of ops (see combinedSQL):
// the claims (append index, scope, key, digest, claim id, and status and
// body when the append carries the answer too), the node's instance, and
// the answers (append index, scope, key, claim id, status, body). The
// rows' times are the database's (now()), never the node's clock.
func rideArgs(ops []*groupOp, instance string) []any {
	var cai, aai []int32
	var cs, as []string
	var ck, cd, cid, cb, ak, aid, ab [][]byte
	var cst []*int32
	var ast []int32
	for i, op := range ops {
		for _, w := range op.app.rides {
			c := w.c
			if w.answer {
				if op.app.carriesClaim(c) {
					continue // folded into the claim's row
				}
				aai, as, ak, aid = append(aai, int32(i+1)), append(as, c.k.scope), append(ak, []byte(c.k.key)), append(aid, c.id)
				ast, ab = append(ast, int32(c.ride.answer.Status)), append(ab, c.ride.answer.Body)
				continue
			}
			cai, cs, ck, cd, cid = append(cai, int32(i+1)), append(cs, c.k.scope), append(ck, []byte(c.k.key)), append(cd, c.digest[:]), append(cid, c.id)
			if op.app.carriesAnswer(c) {
				st := int32(c.ride.answer.Status)
				cst, cb = append(cst, &st), append(cb, c.ride.answer.Body)
			} else {
				cst, cb = append(cst, nil), append(cb, nil)
			}
		}
	}
	return []any{cai, cs, ck, cd, cid, cst, cb, instance, aai, as, ak, aid, ast, ab}
}

func (a *appendOp) carriesClaim(c *RequestClaim) bool {
	for _, w := range a.rides {
		if w.c == c && !w.answer {
			return true
		}
	}
	return false
}

// wroteAnswer reports whether the append wrote c's answer: in c's own
// claim row, or in the row of c's claim committed before.
func (a *appendOp) wroteAnswer(c *RequestClaim) bool {
	if a.carriesClaim(c) {
		return true
	}
	for _, id := range a.answered {
		if string(id) == string(c.id) {
			return true
		}
	}
	return false
}

func (a *appendOp) carriesAnswer(c *RequestClaim) bool {
	for _, w := range a.rides {
		if w.c == c && w.answer {
			return true
		}
	}
	return false
}

// combinedAppend answers the statement and arguments of one append
// statement for ops (distinct sessions, each op.app set), and whether
// the statement writes rides.
func combinedAppend(ops []*groupOp, fenced bool, node, instance string) (string, []any, bool) {
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
	rides := false
	for _, op := range ops {
		rides = rides || len(op.app.rides) > 0
	}
	sql := combinedPlain
	if fenced {
		sql = combinedFenced
		args = append(args, node)
	}
	if rides {
		sql = combinedPlainRides
		if fenced {
			sql = combinedFencedRides
		}
		args = append(args, rideArgs(ops, instance)...)
	}
	return sql, args, rides
}

// readCombined reads the combined statement's rows into ops' results and
// answers the statement's failure, if any, which the batch's Close
// reports too.
func readCombined(br pgx.BatchResults, ops []*groupOp, rides bool) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scanCombined(rows, ops, rides); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, op := range ops {
		if !op.combined {
			op.err = fmt.Errorf("pgstore: the combined append answered no row for session %s", op.app.session)
		}
	}
	return nil
}

// scanCombined reads one result row of the combined statement into its
// op's results.
func scanCombined(row pgx.Row, ops []*groupOp, rides bool) error {
	var i int64
	var head, lease bool
	var answered [][]byte
	var old *int64
	var now int64
	dst := []any{&i, &head, &lease, &old, &now}
	if rides {
		dst = append(dst, &answered)
	}
	if err := row.Scan(dst...); err != nil {
		return err
	}
	if i < 1 || int(i) > len(ops) {
		return nil
	}
	a := ops[i-1].app
	a.head, a.lease, a.old, a.now, a.answered = head, lease, old, now, answered
	ops[i-1].combined = true
	return nil
}
