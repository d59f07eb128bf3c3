package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// smallBuffers shrinks the send buffer of accepted connections so that a
// consumer that stops reading makes the server's writes block quickly.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// countingTransport counts event-stream connections.
type countingTransport struct {
	streams atomic.Int32
	base    http.RoundTripper
}

// newCountingTransport dials with a small receive buffer.
func newCountingTransport() *countingTransport {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	return &countingTransport{base: tr}
}

func (ct *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Accept") == "text/event-stream" {
		ct.streams.Add(1)
	}
	return ct.base.RoundTrip(r)
}

func start(t *testing.T, cfg brain.Config, hc ...*http.Client) (*client.Client, *brain.Server) {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.Token = "tok"
	srv, err := brain.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener = smallBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(func() {
		srv.Close(context.Background())
		hs.Close()
	})
	opts := &client.Options{Token: "tok"}
	if len(hc) > 0 {
		opts.HTTPClient = hc[0]
	}
	c, err := client.New(hs.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// startSession starts a server as start does and creates a session of the
// scripted model on it.
func startSession(t *testing.T, ctx context.Context) (*client.Session, *brain.Server) {
	t.Helper()
	c, srv := start(t, brain.Config{})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

var scripted = api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "demo"}}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	s, err := c.Sessions.Create(ctx, scripted, client.IdempotencyKey("create-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Sessions.Create(ctx, scripted, client.IdempotencyKey("create-1"))
	if err != nil || again.ID != s.ID {
		t.Fatalf("replayed create = %v, %v; want %s", again, err, s.ID)
	}
	sum, err := s.Send(ctx, api.UserInput{Message: "hello"})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send = %+v, %v", sum, err)
	}
	tr, err := s.Transcript(ctx)
	if err != nil || len(tr.Messages) != 2 || tr.Messages[1].Text() != "echo: hello" {
		t.Fatalf("Transcript = %+v, %v", tr, err)
	}
	rec, err := s.Submit(ctx, api.UserInput{Message: "again"}, client.IdempotencyKey("sub-1"))
	if err != nil || rec.Sequence == 0 || rec.SessionID != s.ID {
		t.Fatalf("Submit = %+v, %v", rec, err)
	}
	// Pages from 0 hold the receipt's turn_started.
	found := false
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Sequence == rec.Sequence && ev.EventType == api.KindTurnStarted {
			found = true
		}
	}
	if !found {
		t.Fatalf("turn_started %d not among the events", rec.Sequence)
	}
	// Deleting a live session is a conflict, typed, and tells its code to
	// errors.Is.
	var ae *api.ApiError
	if err := s.Delete(ctx); !errors.As(err, &ae) || ae.Code != api.CodeConflict || !errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
		t.Fatalf("Delete of an idle session = %v, want conflict", err)
	}
	// Wait for the submitted turn through a followed stream, then end.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ev, err := range s.Events(fctx, rec.Sequence, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == api.KindTurnEnded {
			break
		}
	}
	if _, err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	var last api.Event
	for ev, err := range s.Events(fctx, 0, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if last.EventType != api.KindSessionEnded {
		t.Fatalf("followed stream of an ended session ended at %+v", last)
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sessions.Get(ctx, s.ID); !errors.As(err, &ae) || ae.Code != api.CodeNotFound || !errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrConflict) {
		t.Fatalf("Get after delete = %v", err)
	}
	c.Close()
	if _, err := c.Sessions.List(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("List after Close = %v", err)
	}
}

// TestFollowResumesAfterLag makes a stream lag (backlog 2, a consumer that
// stops reading while megabytes of events are committed) and checks that
// Follow reconnects from its cursor and yields every event exactly once.
func TestFollowResumesAfterLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ct := newCountingTransport()
	c, _ := start(t, brain.Config{MaxLiveBacklog: 2}, &http.Client{Transport: ct})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 16<<10)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 8 {
			if _, err := s.Send(ctx, api.UserInput{Message: big}); err != nil {
				t.Error(err)
			}
		}
		s.End(ctx)
	}()
	var seqs []uint64
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) == 0 {
			<-sent // stop reading until everything is committed
		}
		seqs = append(seqs, ev.Sequence)
	}
	if n := ct.streams.Load(); n < 2 {
		t.Errorf("%d stream connections: the stream never lagged, resume untested", n)
	}
	var want []uint64
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.Sequence)
	}
	if len(seqs) != len(want) {
		t.Fatalf("followed %d events %v, pages hold %d %v", len(seqs), seqs, len(want), want)
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("event %d: followed %d, page %d", i, seqs[i], want[i])
		}
	}
}

func TestTypedErrors(t *testing.T) {
	ctx := context.Background()
	c, _ := start(t, brain.Config{})
	var ae *api.ApiError
	_, err := c.Sessions.Create(ctx, api.CreateSessionRequest{})
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest {
		t.Fatalf("invalid create = %v", err)
	}
	bad := c.WithToken("wrong")
	defer bad.Close()
	if _, err := bad.Sessions.List(ctx); !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
		t.Fatalf("wrong token = %v", err)
	}
	s, _ := c.Sessions.Create(ctx, scripted)
	_, err = s.Send(ctx, api.UserInput{Message: `{"fail":{"code":"rate_limited","message":"slow down"}}`})
	if !errors.As(err, &ae) || ae.Code != api.CodeModelProviderFailed {
		t.Fatalf("failed turn = %v, want model_provider_failed", err)
	}
}

// tokenTransport remembers the last Authorization header it sent.
type tokenTransport struct {
	last atomic.Pointer[string]
	base http.RoundTripper
}

func (tt *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	a := r.Header.Get("Authorization")
	tt.last.Store(&a)
	return tt.base.RoundTrip(r)
}
