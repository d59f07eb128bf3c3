package brain_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// BenchmarkTurns64HTTP compares unpaced synchronous text turns from 64
// concurrent sessions over HTTP (POST /v1/sessions/{id}/messages through
// the Go client, one connection per session) with the same turns on the
// session engine of the same server, past the HTTP layer: journal fsync
// on, scripted model, built-in loop, default passivation. The two run in
// alternating rounds on the same sessions, so that both see the same
// machine load; each op is one turn of each kind.
//
//	go test ./brain -run '^$' -bench Turns64HTTP -benchtime 4000x -count 3
func BenchmarkTurns64HTTP(b *testing.B) {
	const sessions, rounds = 64, 4
	brn := braintest.Start(b, braintest.Options{Edit: func(c *brain.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = sessions
	c, err := client.New(brn.URL, &client.Options{Token: brn.Token, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	sess := make([]*client.Session, sessions)
	for i := range sess {
		if sess[i], err = c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}); err != nil {
			b.Fatal(err)
		}
	}
	in := api.UserInput{Message: "hello"}
	run := func(n int, turn func(*client.Session) error) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for _, s := range sess {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					if err := turn(s); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	engine := func(s *client.Session) error { _, err := brn.Server.EngineSend(ctx, s.ID, in); return err }
	overHTTP := func(s *client.Session) error { _, err := s.Send(ctx, in); return err }
	// Warm both paths (connections, released projections).
	run(2*sessions, overHTTP)
	run(2*sessions, engine)
	b.ResetTimer()
	var te, th time.Duration
	for r := 0; r < rounds; r++ {
		n := b.N / rounds
		if r%2 == 0 {
			te += run(n, engine)
			th += run(n, overHTTP)
		} else {
			th += run(n, overHTTP)
			te += run(n, engine)
		}
	}
	n := float64(b.N / rounds * rounds)
	b.ReportMetric(n/te.Seconds(), "engine-turns/s")
	b.ReportMetric(n/th.Seconds(), "http-turns/s")
	b.ReportMetric(te.Seconds()/th.Seconds(), "http/engine")
}
