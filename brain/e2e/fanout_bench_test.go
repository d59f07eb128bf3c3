package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/fanoutfloor"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// fanOutFloorEnv makes the test binary the bare fan-out server of
// TestBenchFanOut (runFanOutFloor); its value is a directory for the
// server's fdatasync file.
const fanOutFloorEnv = "BRAIN_E2E_FANOUT_FLOOR"

const (
	fanOutSubs  = 1000
	fanOutTurns = 20
)

// TestBenchFanOut measures row 13 (PERFORMANCE.md) alone, in rounds that
// alternate a fresh brain serve and its floor, a fresh bare server in a
// process of its own (runFanOutFloor): 1,000 subscribers read by the same
// code in this process, 20 turns. For each it prints the delivery spread
// (arrival at a subscriber − the earliest arrival of that record
// anywhere), the private memory per idle subscriber (0.5 s after the last
// subscribed, and 5 s after) and the server's CPU
// time per subscriber and turn. It runs only with BRAIN_BENCH=1:
//
//	BRAIN_BENCH=1 BRAIN_BENCH_ROUNDS=6 go test -count=1 -run TestBenchFanOut -v ./brain/e2e
//
// The turns go back to back unless BRAIN_BENCH_PACE (a duration, such as
// 50ms) spaces them: unpaced, a turn is answered long before its frames
// have reached 1,000 subscribers, so the spread also measures the frames
// of earlier turns still queued.
func TestBenchFanOut(t *testing.T) {
	if os.Getenv("BRAIN_BENCH") != "1" {
		t.Skip("set BRAIN_BENCH=1 to run the HTTP API benchmarks")
	}
	if raceEnabled {
		t.Skip("benchmarks are not run under the race detector")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("BRAIN_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for round := range rounds {
		fl := startFanOutFloor(t)
		f := fanOutFloor(t, fl)
		fl.kill()
		s := start(t, "", "BRAIN_LOG_LEVEL=error")
		b := fanOut(t, s)
		s.stop()
		fmt.Printf("row 13 round %d: brain %s | floor %s | p99 ratio %.2f\n", round, b, f, ratio(pct(b.lat, 99), pct(f.lat, 99)))
	}
}

// fanOutResult is one measured fan-out.
type fanOutResult struct {
	lat     []time.Duration // delivery spread of every arrival
	missing int             // subscribers that got nothing
	memSub  float64         // private bytes per idle subscriber, 0.5 s after the last subscribed
	memSub5 float64         // the same 5 s after
	cpuSub  time.Duration   // server CPU per subscriber and turn
}

func (r fanOutResult) String() string {
	return fmt.Sprintf("spread %s, %d subscribers with nothing, %.1f KiB per idle subscriber (%.1f KiB 5 s later), server CPU %.1f µs per subscriber and turn",
		stats(r.lat), r.missing, r.memSub/1024, r.memSub5/1024, float64(r.cpuSub.Nanoseconds())/1000)
}

// fanOut subscribes 1,000 streams to a new session of s and runs 20
// turns on it.
func fanOut(t *testing.T, s *server) fanOutResult {
	id := s.create().SessionID
	last := s.summary(id).LastSequence
	url := fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", s.URL, id, last)
	return measureFanOut(t, s.cmd.Process.Pid, url, s.Token, func() uint64 {
		for range fanOutTurns {
			time.Sleep(fanOutPace())
			if r := s.send(id, "fan out"); r.Status != 200 {
				t.Fatalf("send = %d", r.Status)
			}
		}
		return s.summary(id).LastSequence - 1
	})
}

// fanOutFloor runs the same turns' frames through the bare server.
func fanOutFloor(t *testing.T, fl *child) fanOutResult {
	return measureFanOut(t, fl.cmd.Process.Pid, fl.URL+"/events", "", func() uint64 {
		seq := uint64(2)
		for range fanOutTurns {
			time.Sleep(fanOutPace())
			for _, b := range fanoutfloor.TurnFrames(&seq) {
				resp, err := http.Post(fl.URL+"/publish", "text/event-stream", strings.NewReader(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		return seq - 1
	})
}

// measureFanOut subscribes 1,000 readers to url, lets them settle, runs
// the turns (which answer the sequence every subscriber must reach) and
// measures the server process pid.
func measureFanOut(t *testing.T, pid int, url, token string, turns func() uint64) fanOutResult {
	memBefore := privateBytes(t, pid)
	type arrival struct {
		seq uint64
		at  time.Time
	}
	got := make([][]arrival, fanOutSubs)
	var ready, wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fanOutSubs}}
	for i := range fanOutSubs {
		ready.Add(1)
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			req.Header.Set("Accept", "text/event-stream")
			resp, err := hc.Do(req)
			ready.Done()
			if err != nil {
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if v, ok := strings.CutPrefix(line, "id: "); ok {
					seq, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
					got[i] = append(got[i], arrival{seq, time.Now()})
				}
			}
		})
	}
	ready.Wait()
	time.Sleep(500 * time.Millisecond) // let every subscription register and go idle
	memSubs := privateBytes(t, pid)
	time.Sleep(4500 * time.Millisecond)
	memSubs5 := privateBytes(t, pid)
	cpu0 := processCPU(t, pid)
	final := turns()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for i := range fanOutSubs {
			if n := len(got[i]); n > 0 && got[i][n-1].seq >= final {
				done++
			}
		}
		if done == fanOutSubs {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu := processCPU(t, pid) - cpu0
	cancel()
	wg.Wait()
	first := map[uint64]time.Time{}
	for i := range fanOutSubs {
		for _, a := range got[i] {
			if f, ok := first[a.seq]; !ok || a.at.Before(f) {
				first[a.seq] = a.at
			}
		}
	}
	var r fanOutResult
	for i := range fanOutSubs {
		for _, a := range got[i] {
			r.lat = append(r.lat, a.at.Sub(first[a.seq]))
		}
		if len(got[i]) == 0 {
			r.missing++
		}
	}
	if len(r.lat) == 0 {
		t.Fatal("no frame arrived")
	}
	r.memSub = float64(memSubs-memBefore) / fanOutSubs
	r.memSub5 = float64(memSubs5-memBefore) / fanOutSubs
	r.cpuSub = cpu / (fanOutSubs * fanOutTurns)
	return r
}

// processCPU answers the user and system CPU time of process pid.
func processCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (which ends with ')'): utime and
	// stime are the 12th and 13th of them, in clock ticks (100 Hz).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// startFanOutFloor runs the bare fan-out server in a child process.
func startFanOutFloor(t *testing.T) *child {
	t.Helper()
	return reexec(t, fanOutFloorEnv+"="+t.TempDir(), "fan-out floor")
}

// runFanOutFloor serves the bare minimum of an event stream fan-out until
// killed: GET /events takes the connection over and writes a chunked
// response head; POST /publish does one write+fdatasync of 100 bytes in
// dir (a commit), answers, and then writes its body as one chunk to
// every connection, one write each from GOMAXPROCS goroutines, batches in
// order. It is also the floor of row 3 (TestBenchHTTPAPI): POST /admit
// reads the request, does one write+fdatasync of 100 bytes and answers
// 202 with a small JSON body, a raw fdatasync behind a loopback HTTP echo
// in a process of its own, as Brain's admission is; GET /ping answers 204.
func runFanOutFloor(dir string) int {
	f, err := os.Create(filepath.Join(dir, "fdatasync"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var fl fanoutfloor.Floor
	batches := make(chan []byte, 1024)
	go func() {
		for frames := range batches {
			fl.Publish(frames)
		}
	}()
	rec := make([]byte, 100)
	mux := http.NewServeMux()
	mux.Handle("GET /events", &fl)
	mux.HandleFunc("POST /publish", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = f.Write(rec)
		_ = fsutil.Fdatasync(f)
		batches <- body
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admit", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = f.Write(rec)
		_ = fsutil.Fdatasync(f)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(body)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%shttp://%s\n", readyLine, ln.Addr())
	_ = http.Serve(ln, mux)
	return 0
}

// fanOutPace answers the pause before each turn (BRAIN_BENCH_PACE).
func fanOutPace() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("BRAIN_BENCH_PACE"))
	return d
}
