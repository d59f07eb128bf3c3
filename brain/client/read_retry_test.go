package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

const overloaded = `{"code":"overloaded","message":"the server is shutting down","retryable":true}`

// flaky answers every request; the first fail of them it fails as
// fail says: "drop" closes the connection without an answer, any other
// value is answered 503 overloaded with that Retry-After.
type flaky struct {
	mu       sync.Mutex
	fail     int
	how      string
	arrivals []time.Time
	methods  []string
	// arrived, when set, is called with each request's arrival.
	arrived func()
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.arrivals = append(f.arrivals, time.Now())
	f.methods = append(f.methods, r.Method+" "+r.URL.Path)
	failing, how, arrived := f.fail > 0, f.how, f.arrived
	f.fail--
	f.mu.Unlock()
	if arrived != nil {
		arrived()
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case failing && how == "drop":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case failing:
		if how != "" {
			w.Header().Set("Retry-After", how)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, overloaded)
		return
	}
	switch r.URL.Path {
	case "/health/live", "/health/ready", "/v1/sessions/ses_aaaaaaaaaaaaaaaaaaaa/cancel":
		w.WriteHeader(http.StatusNoContent)
	case "/v1/sessions":
		_, _ = io.WriteString(w, `{"sessions":[]}`)
	case "/v1/sessions/ses_aaaaaaaaaaaaaaaaaaaa/transcript":
		_, _ = io.WriteString(w, `{"messages":[],"through_sequence":1}`)
	case "/v1/sessions/ses_aaaaaaaaaaaaaaaaaaaa/events":
		_, _ = io.WriteString(w, `{"events":[],"next_cursor":0}`)
	case "/v1/models":
		_, _ = io.WriteString(w, `{"snapshot_digest":"d","providers":[]}`)
	case "/v1/agentloops/x", "/v1/tools/x":
		_, _ = io.WriteString(w, `{"id":"x","status":"admitted"}`)
	default:
		_, _ = io.WriteString(w, `{"session_id":"ses_aaaaaaaaaaaaaaaaaaaa","status":"idle","last_sequence":3}`)
	}
}

// flakyClient answers a flaky server and a client of it, both closed
// when the test ends, and a ctx that ends within 30 s.
func flakyClient(t *testing.T) (context.Context, *flaky, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f := &flaky{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, f, c
}

// onArrival sets the function called with each request's arrival (nil:
// none).
func (f *flaky) onArrival(fn func()) {
	f.mu.Lock()
	f.arrived = fn
	f.mu.Unlock()
}

func (f *flaky) reset(fail int, how string) {
	f.mu.Lock()
	f.fail, f.how, f.arrivals, f.methods = fail, how, nil, nil
	f.mu.Unlock()
}

func (f *flaky) seen() ([]time.Time, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.arrivals...), append([]string(nil), f.methods...)
}

// reads are the client's safe reads.
func reads(c *client.Client) map[string]func(context.Context) error {
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	return map[string]func(context.Context) error{
		"Get":        func(ctx context.Context) error { _, err := c.Sessions.Get(ctx, s.ID); return err },
		"List":       func(ctx context.Context) error { _, err := c.Sessions.List(ctx); return err },
		"Transcript": func(ctx context.Context) error { _, err := s.Transcript(ctx); return err },
		"Events": func(ctx context.Context) error {
			for _, err := range s.Events(ctx, 0) {
				return err
			}
			return nil
		},
		"Models.List":    func(ctx context.Context) error { _, err := c.Models.List(ctx); return err },
		"Agentloops.Get": func(ctx context.Context) error { _, err := c.Agentloops.Get(ctx, "x"); return err },
		"Tools.Get":      func(ctx context.Context) error { _, err := c.Tools.Get(ctx, "x"); return err },
	}
}

// TestReadsOutliveAMomentaryOutage: a read whose connection is lost
// before its answer, or that the server answers 503 overloaded (a drain
// before a restart), is sent again after a pause and answers what the
// second attempt got, as a keyed write is.
func TestReadsOutliveAMomentaryOutage(t *testing.T) {
	ctx, f, c := flakyClient(t)
	for name, read := range reads(c) {
		for _, how := range []string{"drop", ""} {
			f.reset(1, how)
			if err := read(ctx); err != nil {
				t.Fatalf("%s after one failed attempt (%q): %v", name, how, err)
			}
			if at, m := f.seen(); len(at) != 2 || m[0] != m[1] {
				t.Fatalf("%s (%q): requests %v, want the same read twice", name, how, m)
			}
		}
	}
}

// TestReadHonoursRetryAfter: a read answered 503 with Retry-After is sent
// again no sooner than the server asked; one whose Retry-After ends after
// ctx's deadline is not sent again and fails at once with the server's
// answer; retries are bounded (Options.Retries) and the last answer is
// the error; health probes answer the state they find, at once.
func TestReadHonoursRetryAfter(t *testing.T) {
	ctx, f, c := flakyClient(t)
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")

	f.reset(1, "1")
	if _, err := s.Refresh(ctx); err != nil {
		t.Fatalf("Refresh after a 503 with Retry-After: %v", err)
	}
	at, _ := f.seen()
	if len(at) != 2 || at[1].Sub(at[0]) < 900*time.Millisecond {
		t.Fatalf("%d attempts, the second %v after the first, want it after Retry-After (1 s)", len(at), at[len(at)-1].Sub(at[0]))
	}

	f.reset(1, "20")
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	start := time.Now()
	_, err := s.Refresh(short)
	stop()
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.CodeOverloaded || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Refresh asked to retry after ctx's deadline: %v, want the overloaded answer", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Refresh asked to retry after ctx's deadline took %v", d)
	}
	if at, _ := f.seen(); len(at) != 1 {
		t.Fatalf("Refresh asked to retry after ctx's deadline was sent %d times", len(at))
	}

	// A wait Retry-After asked for ends with ctx.
	f.reset(1, "20")
	cctx, ccancel := context.WithCancel(ctx)
	f.onArrival(func() { time.AfterFunc(300*time.Millisecond, ccancel) })
	start = time.Now()
	_, err = s.Refresh(cctx)
	f.onArrival(nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Refresh whose ctx ended while it waited to retry: %v after %v, want context.Canceled at once", err, time.Since(start))
	}

	f.reset(100, "")
	_, err = s.Refresh(ctx)
	if !errors.As(err, &ae) || ae.Code != api.CodeOverloaded {
		t.Fatalf("Refresh always answered 503: %v, want the overloaded answer", err)
	}
	if at, _ := f.seen(); len(at) != 3 {
		t.Fatalf("Refresh always answered 503 was sent %d times, want 3 (2 retries)", len(at))
	}

	for name, probe := range map[string]func(context.Context) error{"Live": c.Live, "Ready": c.Ready} {
		f.reset(1, "")
		if err := probe(ctx); !errors.As(err, &ae) || ae.Code != api.CodeOverloaded {
			t.Fatalf("%s answered 503: %v, want the overloaded answer", name, err)
		}
		if at, _ := f.seen(); len(at) != 1 {
			t.Fatalf("%s was sent %d times, want once", name, len(at))
		}
	}
	// A keyed write Brain answers overloaded is not sent again.
	f.reset(1, "")
	if err := s.Interrupt(ctx); !errors.As(err, &ae) {
		t.Fatalf("Interrupt answered 503: %v", err)
	}
	if at, _ := f.seen(); len(at) != 1 {
		t.Fatalf("Interrupt answered 503 was sent %d times, want once", len(at))
	}
}
