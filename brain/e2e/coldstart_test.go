package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// BenchmarkColdStart measures PERFORMANCE.md row 15 with an empty data
// directory: from starting the binary to /health/ready answering 204. The
// baseline is starting the same binary to print its usage and exit, which
// is the process start cost alone.
//
//	go test ./brain/e2e -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	coldStart(b, func() string { return filepath.Join(b.TempDir(), "data") })
}

// BenchmarkColdStartSessions is row 15 with 10,000 sessions on disk
// (created over the API, then the server closed cleanly): sessions open
// lazily, so readiness must not wait for them. The same-run baseline is
// the empty data directory.
//
//	go test ./brain/e2e -run '^$' -bench ColdStartSessions -benchtime 10x
func BenchmarkColdStartSessions(b *testing.B) {
	full := filepath.Join(b.TempDir(), "data")
	seedSessions(b, full, 10000)
	var empty, ready []time.Duration
	for i := 0; i < b.N; i++ {
		// Rounds alternate between the empty and the full directory.
		empty = append(empty, startReady(b, filepath.Join(b.TempDir(), "data")))
		ready = append(ready, startReady(b, full))
	}
	b.ReportMetric(float64(med(ready).Microseconds())/1000, "ready-10k-ms/p50")
	b.ReportMetric(float64(med(empty).Microseconds())/1000, "ready-empty-ms/p50")
	b.ReportMetric(float64(med(ready))/float64(med(empty)), "ratio")
}

// seedSessions creates n sessions in dataDir through an in-process Brain
// and closes it.
func seedSessions(b *testing.B, dataDir string, n int) {
	b.Helper()
	srv, err := brain.New(context.Background(), brain.Config{DataDir: dataDir})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	tok, _ := srv.Token()
	c, err := client.New("http://"+ln.Addr().String(), &client.Options{Token: tok})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	next := make(chan int)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				if _, err := c.Sessions.Create(context.Background(), api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	c.Close()
	select {
	case err := <-errs:
		b.Fatalf("seed: %v", err)
	default:
	}
	stop()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
	list, err := os.ReadDir(filepath.Join(dataDir, "sessions"))
	if err != nil || len(list) < n {
		b.Fatalf("seeded %d entries in sessions/ (%v), want at least %d", len(list), err, n)
	}
}

func coldStart(b *testing.B, dir func() string) {
	var ready, bare []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command(binary, "help").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))
		ready = append(ready, startReady(b, dir()))
	}
	b.ReportMetric(float64(med(ready).Microseconds())/1000, "ready-ms/p50")
	b.ReportMetric(float64(med(bare).Microseconds())/1000, "exec-exit-ms/p50")
	b.ReportMetric(float64(med(ready))/float64(med(bare)), "ratio")
}

// startReady starts the binary over dataDir and answers the time until
// /health/ready answered 204, then kills it.
func startReady(b *testing.B, dataDir string) time.Duration {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary, "serve", "--listen", addr, "--data-dir", dataDir, "--no-auth", "--log-level", "error")
	cmd.Env = os.Environ()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	for {
		resp, err := http.Get("http://" + addr + "/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return time.Since(start)
			}
		}
		if time.Since(start) > 60*time.Second {
			b.Fatalf("brain serve over %s did not become ready", dataDir)
		}
		time.Sleep(500 * time.Microsecond)
	}
}

func med(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
