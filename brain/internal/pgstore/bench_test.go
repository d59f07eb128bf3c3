package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every benchmark here runs against a real PostgreSQL with fsync and
// synchronous_commit on: a commit returns after its WAL is flushed.

var benchData = []byte(`{"text":"` + strings.Repeat("b", 80) + `"}`)

// bareTable has the journal's shape, without anything Brain adds.
const bareTable = `CREATE TABLE bare_records (session_id bytea, sequence bigint, kind bytea, recorded_at_ms bigint,
	data bytea, frame_bytes integer, PRIMARY KEY (session_id, sequence))`

const bareInsert = `INSERT INTO bare_records (session_id, sequence, kind, recorded_at_ms, data, frame_bytes)
	VALUES ($1, $2, $3, $4, $5, $6)`

func p50(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[len(lat)/2]
}

func benchPool(b *testing.B, url string, conns int32) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = conns, conns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), bareTable); err != nil {
		b.Fatal(err)
	}
	return pool
}

// BenchmarkAppendP50 alternates, on one connection each, a durable
// Append of one ~100 B record to one session and the bare baseline: one
// INSERT of the same row in its own transaction (INSERT …; COMMIT). It
// reports both p50s and their ratio. "fenced" appends under a lease, as
// a cluster node does (the statement also checks the lease row and the
// session row's epoch).
func BenchmarkAppendP50(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := "plain"
		if fenced {
			name = "fenced"
		}
		b.Run(name, func(b *testing.B) { benchAppendP50(b, fenced) })
	}
}

func benchAppendP50(b *testing.B, fenced bool) {
	url := pgtest.Database(b)
	db := openDB(b, url, func(o *pgstore.Options) {
		o.MaxConns, o.Fenced, o.LeaseDuration = 1, fenced, time.Hour
	})
	pool := benchPool(b, url, 1)
	ctx := context.Background()
	j := db.Journal()
	if fenced {
		if _, err := db.AcquireLease(ctx, "s"); err != nil {
			b.Fatal(err)
		}
	}
	var app, bare []time.Duration
	next := uint64(1)
	kind := []byte("k")
	frame := int32(journal.FrameSize(&journal.Record{Kind: "k", Data: benchData}))
	// The order alternates so that neither side always runs just after
	// the other (the append wakes the notifier, whose NOTIFY runs on its
	// own connection meanwhile).
	for i := 0; b.Loop(); i++ {
		doApp := func() {
			t0 := time.Now()
			if err := j.Append(ctx, "s", next, []journal.Record{{Kind: "k", Data: benchData}}); err != nil {
				b.Fatal(err)
			}
			app = append(app, time.Since(t0))
		}
		doBare := func() {
			t0 := time.Now()
			if _, err := pool.Exec(ctx, bareInsert, []byte("s"), int64(next), kind, t0.UnixMilli(), benchData, frame); err != nil {
				b.Fatal(err)
			}
			bare = append(bare, time.Since(t0))
		}
		if i%2 == 0 {
			doApp()
			doBare()
		} else {
			doBare()
			doApp()
		}
		next++
	}
	pa, pb := p50(app), p50(bare)
	b.ReportMetric(float64(pa.Microseconds()), "append-p50-µs")
	b.ReportMetric(float64(pb.Microseconds()), "bare-p50-µs")
	b.ReportMetric(float64(pa)/float64(pb), "ratio")
}

// BenchmarkThroughput64 runs 64 sessions, one goroutine each, appending
// one record at a time (b.N records in all) through one DB, whose group
// commit gathers them, then the bare baseline: 64 goroutines on 64
// connections, each an INSERT+COMMIT loop into the same shape of table.
// It reports both rates and their ratio.
func BenchmarkThroughput64(b *testing.B) {
	const sessions = 64
	url := pgtest.Database(b)
	db := openDB(b, url, func(o *pgstore.Options) { o.MaxConns = sessions })
	pool := benchPool(b, url, sessions)
	ctx := context.Background()
	j := db.Journal()
	kind := []byte("k")
	frame := int32(journal.FrameSize(&journal.Record{Kind: "k", Data: benchData}))
	// run does n operations over 64 goroutines and answers the seconds.
	run := func(n int, op func(s string, seq uint64) error) float64 {
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := range sessions {
			wg.Go(func() {
				s := fmt.Sprint("s", w)
				for seq := uint64(1); left.Add(-1) >= 0; seq++ {
					if err := op(s, seq); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(t0).Seconds()
	}
	b.ResetTimer()
	// The phases alternate in rounds, so that a change of load on the
	// machine weighs on both alike; every round uses new sessions.
	const rounds = 4
	var appSecs, bareSecs float64
	for r := range rounds {
		prefix := fmt.Sprintf("%d-%d-", time.Now().UnixNano(), r)
		n := b.N / rounds
		bareSecs += run(n, func(s string, seq uint64) error {
			_, err := pool.Exec(ctx, bareInsert, []byte(prefix+s), int64(seq), kind, time.Now().UnixMilli(), benchData, frame)
			return err
		})
		appSecs += run(n, func(s string, seq uint64) error {
			return j.Append(ctx, prefix+s, seq, []journal.Record{{Kind: "k", Data: benchData}})
		})
	}
	total := float64(b.N / rounds * rounds)
	app, bare := total/appSecs, total/bareSecs
	b.ReportMetric(app, "append-rec/s")
	b.ReportMetric(bare, "bare-rec/s")
	b.ReportMetric(app/bare, "ratio")
}
