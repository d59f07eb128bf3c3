package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// TestBenchHTTPAPI measures the HTTP API against baselines taken in the
// same run (PERFORMANCE.md rows 3, 4, 13, 14) and prints a table for
// BENCHMARKS.md. It runs only with BRAIN_BENCH=1:
//
//	BRAIN_BENCH=1 go test -run TestBenchHTTPAPI -v ./brain/e2e
func TestBenchHTTPAPI(t *testing.T) {
	if os.Getenv("BRAIN_BENCH") != "1" {
		t.Skip("set BRAIN_BENCH=1 to run the HTTP API benchmarks")
	}
	if raceEnabled {
		t.Skip("benchmarks are not run under the race detector")
	}
	const n = 300
	s := start(t, "", "BRAIN_LOG_LEVEL=error")
	sync3 := fdatasyncLatencies(t, filepath.Dir(s.DataDir), n)
	echo := echoLatencies(t, n)
	fmt.Printf("baseline fdatasync: %s\nbaseline loopback HTTP echo: %s\n", stats(sync3), stats(echo))

	// Row 3: admission, POST async -> 202, on an idle session, with the
	// previous turn finished (not timed) so that turns do not overlap.
	// Each admission is alternated with a request to the floor, a bare
	// server in a process of its own that does one fdatasync and answers
	// (runFanOutFloor). Each timed request comes right after an untimed
	// one to the same process (Brain: the summary that finds the session
	// idle), since on this kind of machine a request to a process idle for
	// a few milliseconds costs several times one sent back to back.
	fl := startFanOutFloor(t)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.create().SessionID
	}
	var admission, floor []time.Duration
	for _, id := range ids {
		floor = append(floor, floorAdmit(t, fl))
		if s.summary(id).Status != api.StatusIdle {
			t.Fatalf("session %s is not idle", id)
		}
		t0 := time.Now()
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"hi"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		admission = append(admission, time.Since(t0))
		if r.Status != 202 {
			t.Fatalf("submit = %d %s", r.Status, r.Body)
		}
		waitIdle(t, s, id)
	}
	fl.kill()
	base3 := pct(sync3, 50) + pct(echo, 50)
	fmt.Printf("row 3 admission: %s; floor (fdatasync behind an echo, own process, alternated) %s, ratio p50 %.2f; baseline p50 fdatasync+echo measured apart %v, ratio p50 %.2f\n",
		stats(admission), stats(floor), ratio(pct(admission, 50), pct(floor, 50)), base3, ratio(pct(admission, 50), base3))

	// Row 4: text turn round trip, synchronous send.
	id := s.create().SessionID
	var turns []time.Duration
	for range n {
		t0 := time.Now()
		r := s.send(id, "hello")
		turns = append(turns, time.Since(t0))
		if r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
	}
	base4 := pct(echo, 50) + 3*pct(sync3, 50)
	fmt.Printf("row 4 turn: %s; baseline p50 echo+3 fdatasync %v; ratio p50 %.2f\n", stats(turns), base4, ratio(pct(turns, 50), base4))

	// Row 13: SSE fan-out to 1,000 subscribers (TestBenchFanOut measures
	// it against its floor).
	fmt.Printf("row 13 SSE fan-out, %d subscribers, %d turns: %s\n", fanOutSubs, fanOutTurns, fanOut(t, s))

	// Row 14: 10,000 requests, private memory of the server process.
	leakGuard(t, s)
}

func leakGuard(t *testing.T, s *server) {
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = s.create().SessionID
	}
	round := func(i int) {
		id := ids[i%len(ids)]
		if r := s.send(id, "leak guard"); r.Status != 200 {
			t.Fatalf("send = %d", r.Status)
		}
		last := s.summary(id).LastSequence
		s.do("GET", "/v1/sessions/"+id+"/transcript", "")
		s.do("GET", fmt.Sprintf("/v1/sessions/%s/events?after=%d", id, last-10), "")
	}
	for i := range 250 { // 1,000 requests of warm-up
		round(i)
	}
	pid := s.cmd.Process.Pid
	warm := privateBytes(t, pid)
	t0 := time.Now()
	for i := range 2500 { // 10,000 requests
		round(i)
	}
	end := privateBytes(t, pid)
	fmt.Printf("row 14 leak guard: 10,000 requests in %v; private memory after warm-up %.1f MiB, after %.1f MiB, growth %.1f MiB\n",
		time.Since(t0).Round(time.Millisecond), mib(warm), mib(end), mib(end-warm))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// privateBytes sums Private_Clean, Private_Dirty and Private_Hugetlb of
// /proc/<pid>/smaps_rollup.
func privateBytes(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "Private_Clean:" || f[0] == "Private_Dirty:" || f[0] == "Private_Hugetlb:") {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
		}
	}
	return total
}

// fdatasyncLatencies times n appends of 100 bytes + fdatasync in dir.
func fdatasyncLatencies(t *testing.T, dir string, n int) []time.Duration {
	f, err := os.CreateTemp(dir, "fdatasync-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 100)
	var out []time.Duration
	for range n {
		t0 := time.Now()
		f.Write(buf)
		if err := fsutil.Fdatasync(f); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

// floorAdmit times one POST /admit to the floor, right after an untimed
// GET /ping.
func floorAdmit(t *testing.T, fl *child) time.Duration {
	ping, err := http.Get(fl.URL + "/ping")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, ping.Body)
	ping.Body.Close()
	t0 := time.Now()
	resp, err := http.Post(fl.URL+"/admit", "application/json", strings.NewReader(`{"input":{"message":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(t0)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("floor admit = %d", resp.StatusCode)
	}
	return d
}

// echoLatencies times n POSTs to a loopback HTTP echo server.
func echoLatencies(t *testing.T, n int) []time.Duration {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	defer hs.Close()
	var out []time.Duration
	for range n {
		t0 := time.Now()
		resp, err := http.Post(hs.URL, "application/json", strings.NewReader(`{"input":{"message":"hi"}}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, time.Since(t0))
	}
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func stats(d []time.Duration) string {
	if len(d) < 100 {
		return fmt.Sprintf("p50 %v (n=%d, too few for p99)", pct(d, 50), len(d))
	}
	return fmt.Sprintf("p50 %v p99 %v (n=%d)", pct(d, 50).Round(time.Microsecond), pct(d, 99).Round(time.Microsecond), len(d))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
