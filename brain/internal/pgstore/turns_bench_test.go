package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
// INSERT+COMMIT loop, the two alternating in rounds. It reports turns/s,
// the bare commits/s and their ratio, and the CPU time per turn of the
// client (this process) and of the nodes, to show where the turns' time
// goes on a machine that the database, the nodes and the client share.
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
	const rounds = 4
	var turnSecs, bareSecs float64
	var clientCPU, nodesCPU, pgCPU, barePG time.Duration
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatal(err)
	}
	nodeCPU := func() time.Duration {
		var sum time.Duration
		for _, n := range ns {
			sum += procCPU(n.cmd.Process.Pid)
		}
		return sum
	}
	var seqBase atomic.Uint64
	for r := range rounds {
		n := b.N / rounds
		base := seqBase.Add(1 << 20)
		prefix := fmt.Sprintf("%d-%d-", time.Now().UnixNano(), r)
		bp0 := serverCPU(backend)
		bareSecs += run(n, func(w int, seq uint64) error {
			_, err := pool.Exec(ctx, bareInsert, []byte(fmt.Sprint(prefix, w)), int64(base+seq), kind, time.Now().UnixMilli(), benchData, frame)
			return err
		})
		barePG += serverCPU(backend) - bp0
		c0, n0, p0 := selfCPU(), nodeCPU(), serverCPU(backend)
		turnSecs += run(n, func(w int, seq uint64) error {
			_, err := ss[w].Send(ctx, api.UserInput{Message: "hi"})
			return err
		})
		clientCPU += selfCPU() - c0
		nodesCPU += nodeCPU() - n0
		pgCPU += serverCPU(backend) - p0
	}
	total := float64(b.N / rounds * rounds)
	turns, bare := total/turnSecs, total/bareSecs
	b.ReportMetric(turns, "turns/s")
	b.ReportMetric(bare, "bare-commits/s")
	b.ReportMetric(turns/bare, "ratio")
	b.ReportMetric(float64(clientCPU.Microseconds())/total, "client-cpu-µs/turn")
	b.ReportMetric(float64(nodesCPU.Microseconds())/total, "nodes-cpu-µs/turn")
	b.ReportMetric(float64(pgCPU.Microseconds())/total, "pg-cpu-µs/turn")
	b.ReportMetric(float64(barePG.Microseconds())/total, "bare-pg-cpu-µs/commit")
}

// selfCPU answers the CPU time this process used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStat answers fields of /proc/pid/stat after the command name
// (field 3 first), nil where there is none.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	if f := strings.Fields(s[i+1:]); len(f) >= 15 {
		return f
	}
	return nil
}

func ticks(f []string, fields ...int) time.Duration {
	var sum int64
	for _, i := range fields {
		v, _ := strconv.ParseInt(f[i-3], 10, 64)
		sum += v
	}
	return time.Duration(sum) * time.Second / 100 // USER_HZ
}

// procCPU answers the CPU time process pid used (utime + stime).
func procCPU(pid int) time.Duration {
	if f := procStat(pid); f != nil {
		return ticks(f, 14, 15)
	}
	return 0
}

// serverCPU answers the CPU time of the PostgreSQL server whose backend
// pid is: its postmaster's, its live children's and its ended children's
// (0 where /proc cannot tell).
func serverCPU(backend int) time.Duration {
	f := procStat(backend)
	if f == nil {
		return 0
	}
	pm, _ := strconv.Atoi(f[4-3])
	pf := procStat(pm)
	if pf == nil {
		return 0
	}
	sum := ticks(pf, 14, 15, 16, 17)
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pm, pm))
	for _, k := range strings.Fields(string(kids)) {
		if pid, err := strconv.Atoi(k); err == nil {
			sum += procCPU(pid)
		}
	}
	return sum
}
