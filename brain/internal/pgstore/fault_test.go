package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestDatabaseCrashDuringAppends kills PostgreSQL (pg_ctl stop -m
// immediate) under concurrent appends, then starts it again. While it is
// down every append fails with ErrUnavailable or ErrOutcomeUnknown (both
// 503 overloaded); every acknowledged record is in the journal after the
// restart, and any other record there is one whose outcome was reported
// unknown; appends resume; a subscriber on another node gets every record
// in order across the outage.
func TestDatabaseCrashDuringAppends(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	fast := func(o *pgstore.Options) { o.OpTimeout = 3 * time.Second }
	db := openDB(t, url, fast)
	follower := openDB(t, url, fast)
	j := db.Journal()
	ctx := context.Background()

	const sessions = 8
	type attempts struct {
		acked   map[uint64]string
		unknown map[uint64][]string
	}
	results := make([]attempts, sessions)
	var stop atomic.Bool
	var failures, afterRestart atomic.Int64
	var restarted atomic.Bool
	var wg sync.WaitGroup
	for w := range sessions {
		results[w] = attempts{acked: map[uint64]string{}, unknown: map[uint64][]string{}}
		wg.Go(func() {
			s := fmt.Sprint("s", w)
			res := &results[w]
			next := uint64(1)
			for i := 0; !stop.Load(); i++ {
				data := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				err := j.Append(ctx, s, next, []journal.Record{{Kind: "k", Data: []byte(data)}})
				if err == nil {
					res.acked[next] = data
					next++
					if restarted.Load() {
						afterRestart.Add(1)
					}
					continue
				}
				switch {
				case errors.Is(err, pgstore.ErrOutcomeUnknown):
					res.unknown[next] = append(res.unknown[next], data)
				case errors.Is(err, pgstore.ErrUnavailable):
				default:
					t.Errorf("%s: Append = %v, want ErrUnavailable or ErrOutcomeUnknown", s, err)
					return
				}
				if !errors.Is(err, journal.ErrOverloaded) {
					t.Errorf("%s: %v does not map to 503 overloaded", s, err)
				}
				failures.Add(1)
				// Re-read before acting again.
				for !stop.Load() {
					n, err := j.Next(ctx, s)
					if err == nil {
						next = n
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	sub, err := follower.Journal().Subscribe(ctx, "s0", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	time.Sleep(500 * time.Millisecond)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if err := db.Ping(ctx); !errors.Is(err, pgstore.ErrUnavailable) {
		t.Errorf("Ping with the database down = %v, want ErrUnavailable", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	restarted.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for db.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not recover after the database restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for afterRestart.Load() < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if failures.Load() == 0 {
		t.Fatal("no append failed while the database was down")
	}
	if afterRestart.Load() < 50 {
		t.Fatalf("only %d appends succeeded after the restart", afterRestart.Load())
	}

	var lastS0 uint64
	for w := range sessions {
		s := fmt.Sprint("s", w)
		var all []journal.Record
		for after := uint64(0); ; {
			page, err := j.Read(ctx, s, after, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			all = append(all, page...)
			after = page[len(page)-1].Sequence
		}
		res := results[w]
		for seq, data := range res.acked {
			if seq > uint64(len(all)) || string(all[seq-1].Data) != data {
				t.Fatalf("%s: acknowledged record %d (%s) lost", s, seq, data)
			}
		}
		for i, r := range all {
			seq := uint64(i + 1)
			if r.Sequence != seq {
				t.Fatalf("%s: record %d has sequence %d", s, seq, r.Sequence)
			}
			if res.acked[seq] == string(r.Data) {
				continue
			}
			found := false
			for _, d := range res.unknown[seq] {
				found = found || d == string(r.Data)
			}
			if !found {
				t.Fatalf("%s: record %d (%s) was neither acknowledged nor reported unknown", s, seq, r.Data)
			}
		}
		if w == 0 {
			lastS0 = uint64(len(all))
		}
	}
	// The follower saw all of s0, in order, across the outage.
	for want := uint64(1); want <= lastS0; {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := sub.Next(nctx)
		cancel()
		if errors.Is(err, journal.ErrOverloaded) {
			continue // a catch-up read failed; the next call reads again
		}
		if err != nil {
			t.Fatalf("follower Next (want %d of %d) = %v", want, lastS0, err)
		}
		if r.Sequence != want {
			t.Fatalf("follower got %d, want %d", r.Sequence, want)
		}
		want++
	}
}
