package brain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// BenchmarkTurns64HTTP compares unpaced synchronous text turns from 64
// concurrent sessions over HTTP (POST /v1/sessions/{id}/messages through
// one Go client with its default transport) with the same turns on the
// session engine of the same server, past the HTTP layer: journal fsync
// on, scripted model, built-in loop, default passivation. The same turns
// also go over HTTP from a lean load generator (leanClient: one
// connection per session, no Transport), which prices the server's share
// of an HTTP turn, and a bare net/http server answers the same requests
// (bareJSONFloor). All run in alternating rounds on the same sessions, so
// that all see the same machine load; each op is one turn of each kind.
//
//	go test ./brain -run '^$' -bench Turns64HTTP -benchtime 4000x -count 3
func BenchmarkTurns64HTTP(b *testing.B) {
	const rounds = 4
	brn, sess := turnSessions(b, 64)
	ctx := context.Background()
	in := api.UserInput{Message: "hello"}
	run := func(n int, turn func(*client.Session) error, cpu *time.Duration) time.Duration {
		return runTurns(b, sess, n, turn, cpu)
	}
	engine := func(s *client.Session) error { _, err := brn.Server.EngineSend(ctx, s.ID, in); return err }
	overHTTP := func(s *client.Session) error { _, err := s.Send(ctx, in); return err }
	floor, floorURL := bareJSONFloor(b)
	lean := leanClient(b, brn.URL, brn.Token)
	leanFloor := leanClient(b, floorURL, "token")
	// Warm every path (connections, released projections).
	var ce, ch, cf, cl, clf time.Duration
	run(2*len(sess), overHTTP, &ch)
	run(2*len(sess), engine, &ce)
	run(2*len(sess), floor, &cf)
	run(2*len(sess), lean, &cl)
	run(2*len(sess), leanFloor, &clf)
	ce, ch, cf, cl, clf = 0, 0, 0, 0, 0
	b.ResetTimer()
	var te, th, tl time.Duration
	for r := 0; r < rounds; r++ {
		n := b.N / rounds
		if r%2 == 0 {
			te += run(n, engine, &ce)
			th += run(n, overHTTP, &ch)
			run(n, floor, &cf)
			tl += run(n, lean, &cl)
			run(n, leanFloor, &clf)
		} else {
			run(n, leanFloor, &clf)
			tl += run(n, lean, &cl)
			run(n, floor, &cf)
			th += run(n, overHTTP, &ch)
			te += run(n, engine, &ce)
		}
	}
	n := float64(b.N / rounds * rounds)
	b.ReportMetric(n/te.Seconds(), "engine-turns/s")
	b.ReportMetric(n/th.Seconds(), "http-turns/s")
	b.ReportMetric(te.Seconds()/th.Seconds(), "http/engine")
	b.ReportMetric(float64(ce.Microseconds())/n, "engine-cpu-µs/turn")
	b.ReportMetric(float64(ch.Microseconds())/n, "http-cpu-µs/turn")
	b.ReportMetric(float64(cf.Microseconds())/n, "floor-cpu-µs/req")
	b.ReportMetric(float64((ch-ce).Microseconds())/float64(cf.Microseconds()), "http-overhead/floor")
	b.ReportMetric(n/tl.Seconds(), "lean-turns/s")
	b.ReportMetric(te.Seconds()/tl.Seconds(), "lean/engine")
	b.ReportMetric(float64(cl.Microseconds())/n, "lean-cpu-µs/turn")
	b.ReportMetric(float64(clf.Microseconds())/n, "lean-floor-cpu-µs/req")
}

// bareJSONFloor starts a bare net/http server on loopback whose one
// handler reads and decodes a message request and answers a session
// summary, as the server's route does but with nothing behind it (no
// engine, no idempotency, no authentication), and answers a function that
// POSTs the same request to it through a client configured as
// brain/client configures its own, and the server's base URL (for the
// lean load generator). Its CPU per request is what net/http, loopback
// TCP and the JSON of the request and answer cost both ends: the floor
// under the HTTP path's cost above the engine.
func bareJSONFloor(b *testing.B) (func(*client.Session) error, string) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.MessageRequest
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, _ := json.Marshal(api.SessionSummary{SessionID: r.URL.Path, Status: api.StatusIdle, LastSequence: 7})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	hc := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	url := "http://" + ln.Addr().String()
	base := url + "/v1/sessions/"
	var keys atomic.Int64
	return func(s *client.Session) error {
		body, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: "hello"}})
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+s.ID+"/messages", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer token")
		req.Header.Set("Idempotency-Key", strconv.FormatInt(keys.Add(1), 10))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var sum api.SessionSummary
		if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("floor answered %d: %v", resp.StatusCode, err)
		}
		return nil
	}, url
}

// BenchmarkEngineTurnsBySessions runs the engine path of
// BenchmarkTurns64HTTP alone with 64, 24 and 12 sessions taking turns: the
// fewer turns in flight, the fewer records each group commit carries, and
// the more CPU a turn costs the engine. It prices the engine's share of an
// HTTP turn at the throughput HTTP reaches.
//
//	go test ./brain -run '^$' -bench EngineTurnsBySessions -benchtime 16000x
func BenchmarkEngineTurnsBySessions(b *testing.B) {
	for _, n := range []int{64, 24, 12} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			brn, sess := turnSessions(b, n)
			in := api.UserInput{Message: "hello"}
			turn := func(s *client.Session) error {
				_, err := brn.Server.EngineSend(context.Background(), s.ID, in)
				return err
			}
			var cpu time.Duration
			runTurns(b, sess, 2*n, turn, &cpu)
			cpu = 0
			b.ResetTimer()
			wall := runTurns(b, sess, b.N, turn, &cpu)
			b.ReportMetric(float64(b.N)/wall.Seconds(), "turns/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/turn")
		})
	}
}

// turnSessions starts Brain in-process (journal fsync on, default
// passivation, logs discarded) and creates n sessions on the scripted
// model through a Go client.
func turnSessions(b *testing.B, n int) (*braintest.Brain, []*client.Session) {
	brn := braintest.Start(b, braintest.Options{Edit: func(c *brain.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}})
	c, err := client.New(brn.URL, &client.Options{Token: brn.Token})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	sess := make([]*client.Session, n)
	for i := range sess {
		if sess[i], err = c.Sessions.Create(context.Background(), api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}); err != nil {
			b.Fatal(err)
		}
	}
	return brn, sess
}

// runTurns runs n turns from all of sess at once, each session taking
// the next turn as soon as its last one ended, and answers their wall
// time; it adds the process's CPU time (server and client) to *cpu.
func runTurns(b *testing.B, sess []*client.Session, n int, turn func(*client.Session) error, cpu *time.Duration) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := processCPU()
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
	wall := time.Since(start)
	*cpu += processCPU() - cpu0
	return wall
}

// processCPU answers the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
