package pgstore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestDamagedRecordRowsRefused: a record row whose bytes were damaged in
// the database (data or origin that is no JSON, an empty kind, a row
// missing from the middle or the end of the journal) makes Read answer
// journal.ErrDamaged, as FileStore does for a frame that does not check
// out, instead of handing the damage to the engine or to a subscriber.
func TestDamagedRecordRowsRefused(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, sql string }{
		{"data", `UPDATE brain_records SET data = '\x7b22'::bytea WHERE session_id = $1 AND sequence = 2`},
		{"origin", `UPDATE brain_records SET origin = '\xff00'::bytea WHERE session_id = $1 AND sequence = 2`},
		{"kind", `UPDATE brain_records SET kind = ''::bytea WHERE session_id = $1 AND sequence = 2`},
		{"gap", `DELETE FROM brain_records WHERE session_id = $1 AND sequence = 2`},
		{"tail", `DELETE FROM brain_records WHERE session_id = $1 AND sequence = 3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := pgtest.Database(t)
			j := openDB(t, url, nil).Journal()
			recs := []journal.Record{
				{Kind: "a", Data: []byte(`{"n":1}`)},
				{Kind: "b", Data: []byte(`{"n":2}`), Origin: []byte(`{"o":1}`)},
				{Kind: "c", Data: []byte(`{"n":3}`)},
			}
			if err := j.Append(ctx, "s", 1, recs); err != nil {
				t.Fatal(err)
			}
			sqlExec(t, url, c.sql, []byte("s"))
			// Read to the end, as a session is loaded.
			var after uint64
			var err error
			for {
				var page []journal.Record
				if page, err = j.Read(ctx, "s", after, 0, 0); err != nil || len(page) == 0 {
					break
				}
				after = page[len(page)-1].Sequence
			}
			if !errors.Is(err, journal.ErrDamaged) {
				t.Fatalf("Read of a damaged journal through %d = %v; want ErrDamaged", after, err)
			}
			if !strings.Contains(err.Error(), "s") {
				t.Errorf("error %q does not name the session", err)
			}
		})
	}
}

// TestDamagedAnswerRowRefused: a stored answer whose status is no HTTP
// status (a row damaged in the database) is refused as damage when the
// key is claimed again, never replayed: writing it as a status would
// fail the HTTP server's handler.
func TestDamagedAnswerRowRefused(t *testing.T) {
	url := pgtest.Database(t)
	r := openDB(t, url, nil).Requests(nil)
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	other := openDB(t, url, nil).Requests(nil)
	for i, status := range []int{7, -200, 1000, 70000} {
		key := fmt.Sprintf("k%d", i)
		cl, _, err := r.Claim(ctx, "s", key, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Answer(200, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		sqlExec(t, url, `UPDATE brain_requests SET status = $1 WHERE key = $2`, status, []byte(key))
		_, ans, err := other.Claim(ctx, "s", key, d)
		if !errors.Is(err, idem.ErrDamaged) {
			t.Fatalf("Claim of a key whose stored status is %d = %+v, %v; want idem.ErrDamaged", status, ans, err)
		}
	}
}

// TestDamagedRecordEndsSubscriptions: a record that reaches the journal
// damaged (here a row and head written behind Brain's back, as another
// node's commit would be, then its wake-up) ends the subscriptions that
// follow the session with journal.ErrDamaged, after records before it,
// instead of leaving them waiting for what can never be delivered.
func TestDamagedRecordEndsSubscriptions(t *testing.T) {
	url := pgtest.Database(t)
	j := openDB(t, url, nil).Journal()
	ctx := context.Background()
	if err := j.Append(ctx, "s", 1, []journal.Record{rec("k", 1), rec("k", 2)}); err != nil {
		t.Fatal(err)
	}
	sub, err := j.Subscribe(ctx, "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sqlExec(t, url, `WITH h AS (UPDATE brain_sessions SET next_seq = 5 WHERE session_id = $1)
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, frame_bytes)
		VALUES ($1, 3, 'k', 1, '{"n":3}', 40), ($1, 4, 'k', 1, '{"n"', 40)`, []byte("s"))
	sqlExec(t, url, `SELECT pg_notify('brain_journal', $1)`, hex.EncodeToString([]byte("s"))+" 4")
	for want := uint64(1); ; want++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := sub.Next(nctx)
		cancel()
		if err != nil {
			if want < 3 || !errors.Is(err, journal.ErrDamaged) {
				t.Fatalf("Next (want %d) = %v; want records 1 and 2 (and 3), then ErrDamaged", want, err)
			}
			return
		}
		if r.Sequence != want || want > 3 {
			t.Fatalf("Next = record %d, want %d (records 1 and 2 (and 3), then ErrDamaged)", r.Sequence, want)
		}
	}
}
