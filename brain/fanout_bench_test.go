package brain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
)

// BenchmarkFanOut (PERFORMANCE.md row 13, in-process) subscribes 1,000
// event streams to one session of an in-process Brain over loopback HTTP,
// then runs b.N text turns on it and reports the spread of each record's
// delivery: its arrival at a subscriber minus its earliest arrival at any
// subscriber. The readers run in the same process as the server.
//
//	go test ./brain -run '^$' -bench FanOut -benchtime 20x -count 3
func BenchmarkFanOut(b *testing.B) {
	const subs = 1000
	brn := braintest.Start(b, braintest.Options{Edit: func(c *brain.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, err := brn.Client(b).Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		b.Fatal(err)
	}
	last := sess.Summary.LastSequence
	type arrival struct {
		seq uint64
		at  time.Time
	}
	got := make([][]arrival, subs)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: subs}}
	var ready, wg sync.WaitGroup
	for i := range subs {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", brn.URL, sess.ID, last), nil)
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
		}()
	}
	ready.Wait()
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
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := 0
		for i := range subs {
			if n := len(got[i]); n > 0 && got[i][n-1].seq >= final.LastSequence-1 {
				done++
			}
		}
		if done == subs {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	first := map[uint64]time.Time{}
	for i := range subs {
		for _, a := range got[i] {
			if f, ok := first[a.seq]; !ok || a.at.Before(f) {
				first[a.seq] = a.at
			}
		}
	}
	var lat []time.Duration
	for i := range subs {
		for _, a := range got[i] {
			lat = append(lat, a.at.Sub(first[a.seq]))
		}
	}
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no frame arrived")
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "spread-ms/p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "spread-ms/p99")
	b.ReportMetric(float64(len(lat))/float64(b.N*subs), "frames/turn/subscriber")
}
