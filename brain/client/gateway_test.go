package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// gateway is a reverse proxy in front of a Brain, as a load balancer is.
// A request that lose takes is still relayed to Brain, whose answer the
// gateway then drops: it answers status and body instead, as a proxy whose
// upstream's answer did not come back does (a 502 or 504), or as a node
// of a cluster whose forwarded write lost its answer does (500 ambiguous,
// retryable). Other requests are relayed as they are.
type gateway struct {
	URL   string
	proxy *httputil.ReverseProxy
	up    *url.URL

	mu   sync.Mutex
	lose func(r *http.Request) (status int, body string, ok bool)
	// refuse takes the requests the gateway answers without relaying
	// them: 502 (its upstream was unreachable for a moment), or the
	// refusal refusingWith set.
	refuse  func(r *http.Request) bool
	refusal refusal
	// redirect takes the requests the gateway answers 301 naming their
	// own URL.
	redirect func(r *http.Request) bool
	// held, when set, holds the answers it drops until it is closed.
	held chan struct{}
	// streamRefused is closed when the gateway first answered an event
	// stream's request 502.
	streamRefused chan struct{}
}

// gatewayClient starts Brain with token "tok" behind a gateway and
// answers a client of the gateway, closed when the test ends.
func gatewayClient(t *testing.T) (*client.Client, *gateway) {
	t.Helper()
	b := braintest.Start(t, braintest.Options{Token: "tok"})
	g := newGateway(t, b.URL)
	c, err := client.New(g.URL, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, g
}

func newGateway(t *testing.T, upstream string) *gateway {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{proxy: httputil.NewSingleHostReverseProxy(u), up: u, streamRefused: make(chan struct{})}
	var refused sync.Once
	g.proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, _ error) {
		if r.Header.Get("Accept") == "text/event-stream" {
			refused.Do(func() { close(g.streamRefused) })
		}
		w.WriteHeader(http.StatusBadGateway) // what a proxy answers when its upstream is down
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// refusal is the answer of a request the gateway refuses.
type refusal struct {
	status int
	// retryAfter, when set, is the answer's Retry-After.
	retryAfter string
}

// refusing makes the gateway answer 502 to the requests fn takes without
// relaying them.
func (g *gateway) refusing(fn func(r *http.Request) bool) {
	g.refusingWith(refusal{status: http.StatusBadGateway}, fn)
}

// refusingWith makes the gateway answer how to the requests fn takes
// without relaying them.
func (g *gateway) refusingWith(how refusal, fn func(r *http.Request) bool) {
	g.mu.Lock()
	g.refuse, g.refusal = fn, how
	g.mu.Unlock()
}

// redirecting makes the gateway answer 301 to the requests fn takes,
// naming their own URL, as a proxy that sends clients to its canonical
// address does.
func (g *gateway) redirecting(fn func(r *http.Request) bool) {
	g.mu.Lock()
	g.redirect = fn
	g.mu.Unlock()
}

// holding makes the gateway hold the answers it drops until release is
// called (release may be called more than once).
func (g *gateway) holding() (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.held = ch
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.held == ch {
				g.held = nil
			}
			g.mu.Unlock()
			close(ch)
		})
	}
}

// losing makes the gateway drop Brain's answers of the requests fn takes.
func (g *gateway) losing(fn func(r *http.Request) (int, string, bool)) {
	g.mu.Lock()
	g.lose = fn
	g.mu.Unlock()
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	lose, held, refuse, how, redirect := g.lose, g.held, g.refuse, g.refusal, g.redirect
	g.mu.Unlock()
	if redirect != nil && redirect(r) {
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusMovedPermanently)
		return
	}
	if refuse != nil && refuse(r) {
		if how.retryAfter != "" {
			w.Header().Set("Retry-After", how.retryAfter)
		}
		w.WriteHeader(how.status)
		return
	}
	var status int
	var body string
	ok := false
	if lose != nil {
		status, body, ok = lose(r)
	}
	if !ok {
		g.proxy.ServeHTTP(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	out, _ := http.NewRequest(r.Method, g.up.String()+r.URL.RequestURI(), bytes.NewReader(b))
	out.Header = r.Header.Clone()
	if resp, err := http.DefaultTransport.RoundTrip(out); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// keyed takes the requests with an Idempotency-Key matching path.
func keyed(method, path string, status int, body string) func(r *http.Request) (int, string, bool) {
	return func(r *http.Request) (int, string, bool) {
		return status, body, r.Method == method && strings.HasSuffix(r.URL.Path, path) && r.Header.Get("Idempotency-Key") != ""
	}
}

// once takes the first request fn takes, and no other.
func once(fn func(r *http.Request) (int, string, bool)) func(r *http.Request) (int, string, bool) {
	var taken atomic.Bool
	return func(r *http.Request) (int, string, bool) {
		status, body, ok := fn(r)
		return status, body, ok && !taken.Swap(true)
	}
}

// TestFollowAcrossARestartBehindAProxy follows a session through a
// reverse proxy, as clients of a cluster behind a load balancer do, while
// Brain restarts: meanwhile the proxy answers 502 (its upstream is down),
// and the stream connects again as it does after a refused connection,
// instead of ending with the proxy's answer.
func TestFollowAcrossARestartBehindAProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	first := braintest.Start(t, braintest.Options{DataDir: dir, Token: "tok"})
	g := newGateway(t, first.URL)
	c, err := client.New(g.URL, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		ev  api.Event
		err error
	}
	events := make(chan item, 256)
	go func() {
		defer close(events)
		for ev, err := range s.Events(ctx, 0, client.Follow()) {
			events <- item{ev, err}
			if err != nil {
				return
			}
		}
	}()
	// The stream is open once it yielded the session's creation.
	for it := range events {
		if it.err != nil {
			t.Fatal(it.err)
		}
		if it.ev.EventType == api.KindSessionCreationEnded {
			break
		}
	}
	first.Stop()
	// While Brain is down the proxy answers 502, to the stream too.
	if err := c.Live(ctx); err == nil {
		t.Fatal("Live answered nil while Brain was down")
	}
	select {
	case <-g.streamRefused:
	case <-ctx.Done():
		t.Fatal("the stream never connected again while Brain was down")
	}
	braintest.Start(t, braintest.Options{DataDir: dir, Token: "tok", Addr: strings.TrimPrefix(first.URL, "http://")})
	if _, err := s.Send(ctx, api.UserInput{Message: "after"}); err != nil {
		t.Fatal(err)
	}
	for it := range events {
		if it.err != nil {
			t.Fatalf("the followed stream ended with %v while Brain restarted behind the proxy", it.err)
		}
		if it.ev.EventType == api.KindTurnEnded {
			return
		}
	}
	t.Fatal("the followed stream ended before the turn after the restart")
}

// TestLostAnswerIsAskedForAgain: Brain carried out a keyed write whose
// answer did not reach the client: a proxy answered 502 or 504 in its
// stead (a CDN 520 or 524), or a node of a cluster answered 500 ambiguous, retryable (the
// answer of the node it forwarded the write to was lost). The client
// sends the write again with the same key, gets Brain's answer of the
// first, and the write was carried out once.
func TestLostAnswerIsAskedForAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	answers := []struct {
		name   string
		status int
		body   string
	}{
		{"502", http.StatusBadGateway, "<html>502 Bad Gateway</html>"},
		{"504", http.StatusGatewayTimeout, ""},
		{"520", 520, "<html>Web server is returning an unknown error</html>"},
		{"524", 524, "<html>A timeout occurred</html>"},
		{"ambiguous", http.StatusInternalServerError, `{"code":"ambiguous","message":"the session's node received the request but its answer was lost; the request may have been carried out: send it again with the same Idempotency-Key","retryable":true}`},
	}
	for _, a := range answers {
		// A create whose answer is lost once.
		g.losing(once(keyed(http.MethodPost, "/v1/sessions", a.status, a.body)))
		before, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Sessions.Create(ctx, scripted)
		if err != nil {
			t.Fatalf("%s: create whose answer was lost: %v", a.name, err)
		}
		after, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before)+1 {
			t.Fatalf("%s: %d sessions after one create, %d before", a.name, len(after), len(before))
		}
		// A message and a submission whose answers are lost once.
		for _, async := range []bool{false, true} {
			g.losing(once(keyed(http.MethodPost, "/messages", a.status, a.body)))
			if async {
				_, err = s.Submit(ctx, api.UserInput{Message: "once"})
			} else {
				_, err = s.Send(context.Background(), api.UserInput{Message: "once"})
			}
			if err != nil {
				t.Fatalf("%s: message (async %v) whose answer was lost: %v", a.name, async, err)
			}
			waitIdle(t, ctx, s)
		}
		g.losing(nil)
		tr, err := s.Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(tr)
		if n := strings.Count(string(raw), "echo: once"); n != 2 {
			t.Fatalf("%s: %d answers to the two messages sent once each", a.name, n)
		}
	}
}

func waitIdle(t *testing.T, ctx context.Context, s *client.Session) {
	t.Helper()
	for {
		sum, err := s.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status == api.StatusIdle {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s still %s", s.ID, sum.Status)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
