package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkColdStart measures PERFORMANCE.md row 15 with an empty data
// directory: from starting the binary to /health/ready answering 204. The
// baseline is starting the same binary to print its usage and exit, which
// is the process start cost alone.
//
//	go test ./brain/e2e -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	var ready, bare []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command(binary, "help").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(start))

		dataDir := filepath.Join(b.TempDir(), "data")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(binary, "serve", "--listen", addr, "--data-dir", dataDir, "--no-auth", "--log-level", "error")
		cmd.Env = os.Environ()
		start = time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			resp, err := http.Get("http://" + addr + "/health/ready")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					break
				}
			}
			if time.Since(start) > 30*time.Second {
				cmd.Process.Kill()
				b.Fatal("brain serve did not become ready")
			}
			time.Sleep(500 * time.Microsecond)
		}
		ready = append(ready, time.Since(start))
		cmd.Process.Kill()
		cmd.Wait()
	}
	med := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	b.ReportMetric(float64(med(ready).Microseconds())/1000, "ready-ms/p50")
	b.ReportMetric(float64(med(bare).Microseconds())/1000, "exec-exit-ms/p50")
	b.ReportMetric(float64(med(ready))/float64(med(bare)), "ratio")
}
