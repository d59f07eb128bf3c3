package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// NewStore returns a fresh, empty store; the suite closes it.
type NewStore func(t *testing.T) journal.Store

// Run runs every case of the suite, each against its own store.
func Run(t *testing.T, newStore NewStore) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s journal.Store)
	}{
		{"AppendCompareAndSet", testAppendCAS},
		{"DenseUnderConcurrency", testDenseConcurrent},
		{"RecordedAtMonotonic", testRecordedAt},
		{"RoundTrip", testRoundTrip},
		{"ReadPages", testReadPages},
		{"ReadOversizedAlone", testReadOversized},
		{"ReadBounds", testReadBounds},
		{"SubscribeBacklogThenLive", testSubscribe},
		{"SubscribeLagged", testSubscribeLagged},
		{"SubscribeLagPerSession", testSubscribeLagPerSession},
		{"SubscribeClose", testSubscribeClose},
		{"Delete", testDelete},
		{"Sessions", testSessions},
		{"Checkpoint", testCheckpoint},
		{"CheckpointWithoutRecords", testCheckpointEmpty},
		{"InvalidInput", testInvalid},
		{"Closed", testClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			defer s.Close()
			c.fn(t, s)
		})
	}
}

func rec(kind string, n int) journal.Record {
	return journal.Record{Kind: kind, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

func recs(kind string, from, count int) []journal.Record {
	out := make([]journal.Record, count)
	for i := range out {
		out[i] = rec(kind, from+i)
	}
	return out
}

func mustAppend(t *testing.T, s journal.Store, id string, next uint64, rs []journal.Record) {
	t.Helper()
	if err := s.Append(context.Background(), id, next, rs); err != nil {
		t.Fatalf("Append(%s, %d, %d records) = %v", id, next, len(rs), err)
	}
}

func readAll(t *testing.T, s journal.Store, id string) []journal.Record {
	t.Helper()
	var all []journal.Record
	after := uint64(0)
	for {
		page, err := s.Read(context.Background(), id, after, 0, 0)
		if err != nil {
			t.Fatalf("Read(%s, %d) = %v", id, after, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Sequence
	}
}

func checkDense(t *testing.T, rs []journal.Record, want int) {
	t.Helper()
	if len(rs) != want {
		t.Fatalf("read %d records, want %d", len(rs), want)
	}
	for i, r := range rs {
		if r.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d, want %d", i, r.Sequence, i+1)
		}
	}
}

func testAppendCAS(t *testing.T, s journal.Store) {
	ctx := context.Background()
	if n, err := s.Next(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("Next(new session) = %d, %v; want 1", n, err)
	}
	if err := s.Append(ctx, "a", 2, recs("k", 0, 1)); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("Append at 2 on an empty session = %v, want ErrConflict", err)
	}
	rs := recs("k", 1, 3)
	mustAppend(t, s, "a", 1, rs)
	for i, r := range rs {
		if r.Sequence != uint64(i+1) || r.RecordedAtMs == 0 {
			t.Errorf("records[%d] = seq %d at %d, want seq %d and a stamp", i, r.Sequence, r.RecordedAtMs, i+1)
		}
	}
	for _, stale := range []uint64{1, 3, 5} {
		if err := s.Append(ctx, "a", stale, recs("k", 0, 1)); !errors.Is(err, journal.ErrConflict) {
			t.Errorf("Append at %d when next is 4 = %v, want ErrConflict", stale, err)
		}
	}
	if n, err := s.Next(ctx, "a"); err != nil || n != 4 {
		t.Fatalf("Next = %d, %v; want 4", n, err)
	}
	checkDense(t, readAll(t, s, "a"), 3)
	if n, _ := s.Next(ctx, "b"); n != 1 {
		t.Errorf("Next(other session) = %d, want 1", n)
	}
}

func testDenseConcurrent(t *testing.T, s journal.Store) {
	ctx := context.Background()
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; i < each; {
				n, err := s.Next(ctx, "race")
				if err != nil {
					t.Error(err)
					return
				}
				err = s.Append(ctx, "race", n, []journal.Record{rec(fmt.Sprintf("w%d", w), i)})
				if errors.Is(err, journal.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				i++
			}
		})
	}
	// Other sessions interleave without interfering.
	for _, id := range []string{"x", "y"} {
		wg.Go(func() {
			for i := range each {
				if err := s.Append(ctx, id, uint64(i+1), []journal.Record{rec("k", i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkDense(t, readAll(t, s, "race"), workers*each)
	checkDense(t, readAll(t, s, "x"), each)
	checkDense(t, readAll(t, s, "y"), each)
}

func testRecordedAt(t *testing.T, s journal.Store) {
	future := time.Now().Add(time.Hour).UnixMilli()
	mustAppend(t, s, "a", 1, []journal.Record{{Kind: "k", RecordedAtMs: future}})
	rs := []journal.Record{{Kind: "k"}, {Kind: "k", RecordedAtMs: 1}}
	mustAppend(t, s, "a", 2, rs)
	all := readAll(t, s, "a")
	checkDense(t, all, 3)
	for i := 1; i < len(all); i++ {
		if all[i].RecordedAtMs < all[i-1].RecordedAtMs {
			t.Errorf("recorded_at went backwards: %d then %d", all[i-1].RecordedAtMs, all[i].RecordedAtMs)
		}
	}
	if all[0].RecordedAtMs != future {
		t.Errorf("caller's recorded_at %d was changed to %d", future, all[0].RecordedAtMs)
	}
	now := time.Now().UnixMilli()
	mustAppend(t, s, "b", 1, []journal.Record{{Kind: "k"}})
	if got := readAll(t, s, "b")[0].RecordedAtMs; got < now-60_000 || got > now+60_000 {
		t.Errorf("stamped recorded_at %d is not near now %d", got, now)
	}
}

func testRoundTrip(t *testing.T, s journal.Store) {
	in := []journal.Record{
		{Kind: "with_origin", Data: json.RawMessage(`{"a":[1,2,"é"]}`), Origin: json.RawMessage(`{"tool":"x"}`)},
		{Kind: "no_data"},
		{Kind: "empty_origin", Data: json.RawMessage(`"s"`), Origin: json.RawMessage(`{}`)},
	}
	mustAppend(t, s, "a", 1, slices.Clone(in))
	out := readAll(t, s, "a")
	checkDense(t, out, len(in))
	for i := range in {
		if out[i].Kind != in[i].Kind || string(out[i].Data) != string(in[i].Data) || string(out[i].Origin) != string(in[i].Origin) {
			t.Errorf("record %d = %s %s %s, want %s %s %s", i, out[i].Kind, out[i].Data, out[i].Origin, in[i].Kind, in[i].Data, in[i].Origin)
		}
		if (out[i].Origin == nil) != (in[i].Origin == nil) {
			t.Errorf("record %d origin presence = %v, want %v", i, out[i].Origin != nil, in[i].Origin != nil)
		}
	}
	// Records read are the caller's to keep: mutating them changes nothing.
	out[0].Data[0] = 'X'
	if again := readAll(t, s, "a"); string(again[0].Data) != string(in[0].Data) {
		t.Errorf("store shares memory with a Read result: %s", again[0].Data)
	}
}

func testReadPages(t *testing.T, s journal.Store) {
	ctx := context.Background()
	for i := 0; i < 2500; i += 500 {
		mustAppend(t, s, "a", uint64(i+1), recs("k", i, 500))
	}
	var sizes []int
	after := uint64(0)
	for {
		page, err := s.Read(ctx, "a", after, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if page[0].Sequence != after+1 {
			t.Fatalf("page after %d starts at %d", after, page[0].Sequence)
		}
		sizes = append(sizes, len(page))
		after = page[len(page)-1].Sequence
	}
	if !slices.Equal(sizes, []int{1000, 1000, 500}) {
		t.Errorf("page sizes = %v, want [1000 1000 500]", sizes)
	}
	if page, err := s.Read(ctx, "a", 2500, 0, 0); err != nil || len(page) != 0 {
		t.Errorf("Read(after = last) = %d records, %v; want an empty page", len(page), err)
	}
	if page, err := s.Read(ctx, "a", 9999, 0, 0); err != nil || len(page) != 0 {
		t.Errorf("Read(after > last) = %d records, %v; want an empty page", len(page), err)
	}
	if page, err := s.Read(ctx, "a", 1234, 10, 0); err != nil || len(page) != 10 || page[0].Sequence != 1235 {
		t.Errorf("Read(after 1234, max 10) = %d records, %v", len(page), err)
	}
	if page, err := s.Read(ctx, "never", 0, 0, 0); err != nil || len(page) != 0 {
		t.Errorf("Read(unknown session) = %d records, %v; want an empty page", len(page), err)
	}
}

func testReadOversized(t *testing.T, s journal.Store) {
	ctx := context.Background()
	big := make([]byte, journal.DefaultPageBytes+10)
	big[0] = '"'
	for i := 1; i < len(big)-1; i++ {
		big[i] = 'x'
	}
	big[len(big)-1] = '"'
	mustAppend(t, s, "a", 1, []journal.Record{rec("small", 1), {Kind: "big", Data: big}, rec("small", 3)})
	page, err := s.Read(ctx, "a", 0, 0, 0)
	if err != nil || len(page) != 1 || page[0].Sequence != 1 {
		t.Fatalf("Read(after 0) = %d records, %v; want only record 1 (the next exceeds 8 MiB)", len(page), err)
	}
	page, err = s.Read(ctx, "a", 1, 0, 0)
	if err != nil || len(page) != 1 || page[0].Sequence != 2 || len(page[0].Data) != len(big) {
		t.Fatalf("Read(after 1) = %d records, %v; want the oversized record alone", len(page), err)
	}
	page, err = s.Read(ctx, "a", 2, 0, 0)
	if err != nil || len(page) != 1 || page[0].Sequence != 3 {
		t.Fatalf("Read(after 2) = %d records, %v; want record 3", len(page), err)
	}
}

func testReadBounds(t *testing.T, s journal.Store) {
	ctx := context.Background()
	rs := make([]journal.Record, 10)
	for i := range rs {
		rs[i] = journal.Record{Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`)}
	}
	mustAppend(t, s, "a", 1, rs)
	// Each frame is a little over 1000 bytes: a 3500-byte bound holds 3.
	page, err := s.Read(ctx, "a", 0, 0, 3500)
	if err != nil || len(page) != 3 {
		t.Errorf("Read(maxBytes 3500) = %d records, %v; want 3", len(page), err)
	}
	page, err = s.Read(ctx, "a", 0, 0, 10)
	if err != nil || len(page) != 1 {
		t.Errorf("Read(maxBytes 10) = %d records, %v; want the first record alone", len(page), err)
	}
}

func next(t *testing.T, sub *journal.Subscription) journal.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("Subscription.Next = %v", err)
	}
	return r
}

func testSubscribe(t *testing.T, s journal.Store) {
	ctx := context.Background()
	mustAppend(t, s, "a", 1, recs("k", 1, 1500))
	const total = 3000
	// The appender is not paced: a backlog of every live record keeps a
	// slow scheduler from turning this into a lag test.
	sub, err := s.Subscribe(ctx, "a", 2, total)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		for n := 1501; n <= total; n += 100 {
			if err := s.Append(ctx, "a", uint64(n), recs("k", n, 100)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for want := uint64(3); want <= total; want++ {
		r := next(t, sub)
		if r.Sequence != want {
			t.Fatalf("subscription delivered %d, want %d (gap or duplicate)", r.Sequence, want)
		}
		if string(r.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("record %d data = %s", want, r.Data)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A subscription to a session with nothing yet waits for its first record.
	sub2, err := s.Subscribe(ctx, "fresh", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	mustAppend(t, s, "fresh", 1, recs("k", 1, 1))
	if r := next(t, sub2); r.Sequence != 1 {
		t.Fatalf("fresh subscription delivered %d, want 1", r.Sequence)
	}
}

func testSubscribeLagged(t *testing.T, s journal.Store) {
	ctx := context.Background()
	mustAppend(t, s, "a", 1, recs("k", 1, 1))
	sub, err := s.Subscribe(ctx, "a", 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// Nobody reads: the writer must not wait for the subscriber.
	for n := 2; n <= 20; n++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.Append(actx, "a", uint64(n), recs("k", n, 1))
		cancel()
		if err != nil {
			t.Fatalf("Append with a stalled subscriber = %v", err)
		}
	}
	for i := 0; ; i++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := sub.Next(nctx)
		cancel()
		if errors.Is(err, journal.ErrLagged) {
			break
		}
		if err != nil || i > 4 {
			t.Fatalf("Next after overflow = %v (after %d records), want ErrLagged", err, i)
		}
	}
}

// testSubscribeLagPerSession: each session has its own live backlog, so
// records committed to another session never count against a subscriber.
func testSubscribeLagPerSession(t *testing.T, s journal.Store) {
	ctx := context.Background()
	const backlog = 1 // the smallest Subscribe accepts (zero selects the default)
	const other = 100
	mustAppend(t, s, "a", 1, recs("a", 1, 1))
	sub, err := s.Subscribe(ctx, "a", 1, backlog)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	subB, err := s.Subscribe(ctx, "b", 0, other)
	if err != nil {
		t.Fatal(err)
	}
	defer subB.Close()
	// Nobody reads a's subscription while b commits far more than its
	// backlog, in several appends.
	for n := 1; n <= other; n += 10 {
		mustAppend(t, s, "b", uint64(n), recs("b", n, 10))
	}
	mustAppend(t, s, "a", 2, recs("a", 2, 1))
	nextA := func(want uint64) {
		t.Helper()
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := sub.Next(nctx)
		if errors.Is(err, journal.ErrLagged) {
			t.Fatalf("subscription to a lagged on another session's records: %v", err)
		}
		if err != nil {
			t.Fatalf("Next on a = %v, want record %d", err, want)
		}
		if r.Sequence != want || r.Kind != "a" || string(r.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("subscription to a delivered seq %d %s %s, want seq %d a {\"n\":%d}", r.Sequence, r.Kind, r.Data, want, want)
		}
	}
	nextA(2)
	// Still live: a later record of a arrives too.
	mustAppend(t, s, "a", 3, recs("a", 3, 1))
	nextA(3)
	// b's own subscriber saw all of b, in order.
	for want := uint64(1); want <= other; want++ {
		r := next(t, subB)
		if r.Sequence != want || r.Kind != "b" || string(r.Data) != fmt.Sprintf(`{"n":%d}`, want) {
			t.Fatalf("subscription to b delivered seq %d %s %s, want seq %d", r.Sequence, r.Kind, r.Data, want)
		}
	}
	// Control: many more than the backlog of a's own records, unread, do
	// lag (a backend that delivers after the commit may have handed over
	// a few before the reader starts).
	const own = 10
	for n := 4; n < 4+own; n++ {
		mustAppend(t, s, "a", uint64(n), recs("a", n, 1))
	}
	for i := 0; ; i++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := sub.Next(nctx)
		cancel()
		if errors.Is(err, journal.ErrLagged) {
			break
		}
		if err != nil || i >= own {
			t.Fatalf("Next after a's own overflow = %v (after %d records), want ErrLagged", err, i)
		}
	}
}

func testSubscribeClose(t *testing.T, s journal.Store) {
	ctx := context.Background()
	sub, err := s.Subscribe(ctx, "a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Next(ctx)
		errc <- err
	}()
	sub.Close()
	if err := <-errc; !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	sub2, _ := s.Subscribe(ctx, "a", 0, 0)
	defer sub2.Close()
	cancel()
	if _, err := sub2.Next(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context = %v", err)
	}
}

func testDelete(t *testing.T, s journal.Store) {
	ctx := context.Background()
	mustAppend(t, s, "a", 1, recs("k", 1, 5))
	mustAppend(t, s, "b", 1, recs("k", 1, 2))
	if err := s.WriteCheckpoint(ctx, "a", 5, []byte("cp")); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, "a", 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("subscription Next after Delete = %v, want ErrNotFound", err)
	}
	if n, err := s.Next(ctx, "a"); err != nil || n != 1 {
		t.Errorf("Next after Delete = %d, %v; want 1", n, err)
	}
	if page, err := s.Read(ctx, "a", 0, 0, 0); err != nil || len(page) != 0 {
		t.Errorf("Read after Delete = %d records, %v", len(page), err)
	}
	if _, _, err := s.ReadCheckpoint(ctx, "a"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ReadCheckpoint after Delete = %v, want ErrNotFound", err)
	}
	ids, _ := s.Sessions(ctx)
	if slices.Contains(ids, "a") || !slices.Contains(ids, "b") {
		t.Errorf("Sessions after Delete = %v, want b without a", ids)
	}
	if err := s.Append(ctx, "a", 2, recs("k", 1, 1)); !errors.Is(err, journal.ErrConflict) {
		t.Errorf("Append at 2 after Delete = %v, want ErrConflict", err)
	}
	mustAppend(t, s, "a", 1, recs("again", 1, 2))
	all := readAll(t, s, "a")
	checkDense(t, all, 2)
	if all[0].Kind != "again" {
		t.Errorf("recreated session holds %q", all[0].Kind)
	}
	if err := s.Delete(ctx, "never-existed"); err != nil {
		t.Errorf("Delete(unknown) = %v, want nil", err)
	}
	checkDense(t, readAll(t, s, "b"), 2)
}

func testSessions(t *testing.T, s journal.Store) {
	ctx := context.Background()
	if ids, err := s.Sessions(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("Sessions(empty store) = %v, %v", ids, err)
	}
	for _, id := range []string{"s-3", "s-1", "s-2"} {
		mustAppend(t, s, id, 1, recs("k", 1, 1))
	}
	ids, err := s.Sessions(ctx)
	if err != nil || !slices.Equal(ids, []string{"s-1", "s-2", "s-3"}) {
		t.Errorf("Sessions = %v, %v; want [s-1 s-2 s-3]", ids, err)
	}
}

func testCheckpoint(t *testing.T, s journal.Store) {
	ctx := context.Background()
	if _, _, err := s.ReadCheckpoint(ctx, "a"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ReadCheckpoint(absent) = %v, want ErrNotFound", err)
	}
	mustAppend(t, s, "a", 1, recs("k", 1, 10))
	if err := s.WriteCheckpoint(ctx, "a", 11, []byte("x")); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("WriteCheckpoint beyond the journal = %v, want ErrInvalid", err)
	}
	payload := []byte(`{"status":"idle","through":7}`)
	if err := s.WriteCheckpoint(ctx, "a", 7, payload); err != nil {
		t.Fatal(err)
	}
	through, got, err := s.ReadCheckpoint(ctx, "a")
	if err != nil || through != 7 || string(got) != string(payload) {
		t.Fatalf("ReadCheckpoint = %d, %q, %v; want 7, %q", through, got, err, payload)
	}
	// Later appends do not invalidate it; a newer one replaces it.
	mustAppend(t, s, "a", 11, recs("k", 11, 5))
	if through, _, err := s.ReadCheckpoint(ctx, "a"); err != nil || through != 7 {
		t.Fatalf("ReadCheckpoint after appends = %d, %v; want 7", through, err)
	}
	if err := s.WriteCheckpoint(ctx, "a", 15, nil); err != nil {
		t.Fatal(err)
	}
	if through, got, err := s.ReadCheckpoint(ctx, "a"); err != nil || through != 15 || len(got) != 0 {
		t.Fatalf("ReadCheckpoint = %d, %q, %v; want 15 with an empty payload", through, got, err)
	}
	if _, _, err := s.ReadCheckpoint(ctx, "b"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("other session's ReadCheckpoint = %v, want ErrNotFound", err)
	}
}

// testCheckpointEmpty: a checkpoint of a session that holds no record,
// never created or deleted, is refused with ErrInvalid and leaves nothing
// behind: no checkpoint to read, no session listed, even once the session
// is created.
func testCheckpointEmpty(t *testing.T, s journal.Store) {
	ctx := context.Background()
	for _, through := range []uint64{0, 1} {
		if err := s.WriteCheckpoint(ctx, "never", through, []byte("x")); !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("WriteCheckpoint(never created, through %d) = %v, want ErrInvalid", through, err)
		}
	}
	if _, _, err := s.ReadCheckpoint(ctx, "never"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ReadCheckpoint after a refused checkpoint = %v, want ErrNotFound", err)
	}
	if ids, err := s.Sessions(ctx); err != nil || len(ids) != 0 {
		t.Errorf("Sessions after a refused checkpoint = %v, %v; want none", ids, err)
	}
	mustAppend(t, s, "never", 1, recs("k", 1, 2))
	if through, got, err := s.ReadCheckpoint(ctx, "never"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ReadCheckpoint once created = %d, %q, %v; want ErrNotFound", through, got, err)
	}

	mustAppend(t, s, "gone", 1, recs("k", 1, 3))
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteCheckpoint(ctx, "gone", 0, []byte("x")); !errors.Is(err, journal.ErrInvalid) {
		t.Errorf("WriteCheckpoint(deleted session) = %v, want ErrInvalid", err)
	}
	if _, _, err := s.ReadCheckpoint(ctx, "gone"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ReadCheckpoint(deleted session) = %v, want ErrNotFound", err)
	}
	mustAppend(t, s, "gone", 1, recs("k", 1, 1))
	if through, got, err := s.ReadCheckpoint(ctx, "gone"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("ReadCheckpoint of the session created anew = %d, %q, %v; want ErrNotFound", through, got, err)
	}
}

func testInvalid(t *testing.T, s journal.Store) {
	ctx := context.Background()
	for _, id := range []string{"", ".", "..", "a/b", ".hidden", strings.Repeat("x", 300)} {
		if err := s.Append(ctx, id, 1, recs("k", 1, 1)); !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("Append(session %q) = %v, want ErrInvalid", id, err)
		}
	}
	bad := [][]journal.Record{
		nil,
		{{Kind: ""}},
		{{Kind: "k", Data: json.RawMessage(`{not json`)}},
		{{Kind: "k", Origin: json.RawMessage(`[`)}},
	}
	for _, rs := range bad {
		if err := s.Append(ctx, "a", 1, rs); !errors.Is(err, journal.ErrInvalid) {
			t.Errorf("Append(%v) = %v, want ErrInvalid", rs, err)
		}
	}
	if n, _ := s.Next(ctx, "a"); n != 1 {
		t.Errorf("rejected appends changed Next to %d", n)
	}
}

func testClosed(t *testing.T, s journal.Store) {
	ctx := context.Background()
	mustAppend(t, s, "a", 1, recs("k", 1, 1))
	sub, err := s.Subscribe(ctx, "a", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := s.Append(ctx, "a", 2, recs("k", 2, 1)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Read(ctx, "a", 0, 0, 0); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Read after Close = %v, want ErrClosed", err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("subscription Next after store Close = %v, want ErrClosed", err)
	}
}
