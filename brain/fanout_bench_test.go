package brain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/internal/fanoutfloor"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// fanOutSubs is the number of subscribers of the fan-out benchmarks.
const fanOutSubs = 1000

// BenchmarkFanOut (PERFORMANCE.md row 13, in-process) subscribes 1,000
// event streams to one session of an in-process Brain over loopback HTTP,
// then runs b.N text turns on it and reports the spread of each record's
// delivery: its arrival at a subscriber minus its earliest arrival at any
// subscriber. The readers run in the same process as the server.
// BenchmarkFanOutFloor is its baseline.
//
//	go test ./brain -run '^$' -bench FanOut -benchtime 20x -count 3
func BenchmarkFanOut(b *testing.B) {
	brn := braintest.Start(b, braintest.Options{Edit: func(c *brain.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, err := brn.Client(b).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		b.Fatal(err)
	}
	url := fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", brn.URL, sess.ID, sess.Summary.LastSequence)
	r := subscribe(ctx, url, fanOutSubs)
	time.Sleep(500 * time.Millisecond)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := sess.Send(ctx, api.UserInput{Message: "fan out"}); err != nil {
			b.Fatal(err)
		}
	}
	final, err := sess.Refresh(ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.waitFor(final.LastSequence - 1)
	b.StopTimer()
	cancel()
	r.report(b, b.N)
}

// BenchmarkFanOutFloor is the floor of BenchmarkFanOut, measured by the
// same readers: a bare server holding 1,000 hijacked connections that, for
// each turn, twice does one write+fdatasync of 100 bytes (a commit) and
// then writes the frames of that commit (the sizes of a text turn's
// events: turn_started, then the five others) to every connection as one
// chunk, with one write per connection from GOMAXPROCS goroutines.
//
//	go test ./brain -run '^$' -bench FanOut -benchtime 20x -count 3
func BenchmarkFanOutFloor(b *testing.B) {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "fdatasync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fl := &fanoutfloor.Floor{}
	srv := &http.Server{Handler: fl}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	defer fl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := subscribe(ctx, "http://"+ln.Addr().String()+"/events", fanOutSubs)
	for fl.Count() < fanOutSubs {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	rec := make([]byte, 100)
	seq := uint64(2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, batch := range fanoutfloor.TurnFrames(&seq) {
			if _, err := f.Write(rec); err != nil {
				b.Fatal(err)
			}
			if err := fsutil.Fdatasync(f); err != nil {
				b.Fatal(err)
			}
			fl.Publish(batch)
		}
	}
	r.waitFor(seq - 1)
	b.StopTimer()
	cancel()
	r.report(b, b.N)
}

// arrival is one frame's arrival at a subscriber.
type arrival struct {
	seq uint64
	at  time.Time
}

// readers are the subscribers of a fan-out benchmark.
type readers struct {
	got []([]arrival)
	wg  sync.WaitGroup
}

// subscribe opens n event streams of url, each read by a goroutine that
// notes when each recorded event arrives, and answers once every request
// has its response head.
func subscribe(ctx context.Context, url string, n int) *readers {
	r := &readers{got: make([][]arrival, n)}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var ready sync.WaitGroup
	for i := range n {
		ready.Add(1)
		r.wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
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
					r.got[i] = append(r.got[i], arrival{seq, time.Now()})
				}
			}
		})
	}
	ready.Wait()
	return r
}

// waitFor waits (30 s at most) until every subscriber has seq.
func (r *readers) waitFor(seq uint64) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for i := range r.got {
			if n := len(r.got[i]); n > 0 && r.got[i][n-1].seq >= seq {
				done++
			}
		}
		if done == len(r.got) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// report waits for the readers to end (cancel their context first) and
// reports the spread of the deliveries of turns turns.
func (r *readers) report(b *testing.B, turns int) {
	r.wg.Wait()
	first := map[uint64]time.Time{}
	for i := range r.got {
		for _, a := range r.got[i] {
			if f, ok := first[a.seq]; !ok || a.at.Before(f) {
				first[a.seq] = a.at
			}
		}
	}
	var lat []time.Duration
	for i := range r.got {
		for _, a := range r.got[i] {
			lat = append(lat, a.at.Sub(first[a.seq]))
		}
	}
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no frame arrived")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "spread-ms/p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "spread-ms/p99")
	b.ReportMetric(float64(len(lat))/float64(turns*len(r.got)), "frames/turn/subscriber")
}
