package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// BenchmarkClusterTurns64 runs b.N turns of the scripted model over 64
// sessions (one client goroutine each, sessions created round robin on
// the nodes and sent to the node that created them) on 1, 2 and 3 brain
// serve processes sharing one database, and, in the same run and on the
// same server, the bare bound: 64 goroutines on 64 connections in an
// INSERT+COMMIT loop. It reports turns/s, the bare commits/s and their
// ratio.
func BenchmarkClusterTurns64(b *testing.B) {
	for _, nodes := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchClusterTurns(b, nodes) })
	}
}

func benchClusterTurns(b *testing.B, nodes int) {
	const sessions = 64
	dbURL, keyFile := pgtest.Database(b), sealingKey(b)
	var ns []*node
	for range nodes {
		ns = append(ns, clusterNode(b, dbURL, keyFile, 10))
	}
	ctx := context.Background()
	ttl := int64(0)
	ss := make([]*client.Session, sessions)
	for i := range ss {
		s, err := ns[i%nodes].client(b).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}, IdleTTLMs: &ttl})
		if err != nil {
			b.Fatal(err)
		}
		ss[i] = s
	}
	pool := benchPool(b, dbURL, sessions)
	kind := []byte("k")
	frame := int32(journal.FrameSize(&journal.Record{Kind: "k", Data: benchData}))
	run := func(n int, op func(w int, seq uint64) error) float64 {
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := range sessions {
			wg.Go(func() {
				for seq := uint64(1); left.Add(-1) >= 0; seq++ {
					if err := op(w, seq); err != nil {
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
	const rounds = 2
	var turnSecs, bareSecs float64
	var seqBase atomic.Uint64
	for r := range rounds {
		n := b.N / rounds
		base := seqBase.Add(1 << 20)
		prefix := fmt.Sprintf("%d-%d-", time.Now().UnixNano(), r)
		bareSecs += run(n, func(w int, seq uint64) error {
			_, err := pool.Exec(ctx, bareInsert, []byte(fmt.Sprint(prefix, w)), int64(base+seq), kind, time.Now().UnixMilli(), benchData, frame)
			return err
		})
		turnSecs += run(n, func(w int, seq uint64) error {
			_, err := ss[w].Send(ctx, api.UserInput{Message: "hi"})
			return err
		})
	}
	total := float64(b.N / rounds * rounds)
	turns, bare := total/turnSecs, total/bareSecs
	b.ReportMetric(turns, "turns/s")
	b.ReportMetric(bare, "bare-commits/s")
	b.ReportMetric(turns/bare, "ratio")
}
