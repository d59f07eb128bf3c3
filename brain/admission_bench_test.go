package brain_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// BenchmarkAdmissionHTTP (PERFORMANCE.md rows 3 and 4) times, on an
// in-process Brain over loopback HTTP (journal and requests log fsync on,
// scripted model, built-in loop), an async submission to an idle session
// until its 202 (row 3) and a synchronous text turn until its 200 (row 4),
// interleaved op by op with their baselines measured in the same run: one
// write+fdatasync of 100 bytes in the data directory's file system and
// one loopback HTTP POST of the same body to an echo server.
//
//	go test ./brain -run '^$' -bench AdmissionHTTP -benchtime 300x -count 3
func BenchmarkAdmissionHTTP(b *testing.B) {
	brn := braintest.Start(b, braintest.Options{Edit: func(c *brain.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}})
	c := brn.Client(b)
	ctx := context.Background()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer echo.Close()
	f, err := os.Create(filepath.Join(filepath.Dir(brn.DataDir), "fdatasync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := make([]byte, 100)
	body := []byte(`{"input":{"message":"hello"}}`)
	in := api.UserInput{Message: "hello"}
	sync := func() time.Duration {
		t0 := time.Now()
		if _, err := f.Write(rec); err != nil {
			b.Fatal(err)
		}
		if err := fsutil.Fdatasync(f); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	roundTrip := func() time.Duration {
		t0 := time.Now()
		resp, err := http.Post(echo.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(t0)
	}
	turn, err := c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		b.Fatal(err)
	}
	var admit, send, syncs, rtts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := s.Submit(ctx, in); err != nil {
			b.Fatal(err)
		}
		admit = append(admit, time.Since(t0))
		b.StopTimer()
		for {
			sum, err := s.Refresh(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if sum.Status == api.StatusIdle {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		b.StartTimer()
		t0 = time.Now()
		if _, err := turn.Send(ctx, in); err != nil {
			b.Fatal(err)
		}
		send = append(send, time.Since(t0))
		syncs = append(syncs, sync())
		rtts = append(rtts, roundTrip())
	}
	base := median(syncs) + median(rtts)
	b.ReportMetric(float64(median(admit).Microseconds()), "admit-µs/p50")
	b.ReportMetric(float64(median(send).Microseconds()), "turn-µs/p50")
	b.ReportMetric(float64(median(syncs).Microseconds()), "fdatasync-µs/p50")
	b.ReportMetric(float64(median(rtts).Microseconds()), "echo-µs/p50")
	b.ReportMetric(float64(median(admit))/float64(base), "admit/(fdatasync+echo)")
	b.ReportMetric(float64(median(send))/float64(median(rtts)+3*median(syncs)), "turn/(echo+3fdatasync)")
}
