package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

const testToken = "test-token"

type fixture struct {
	t   *testing.T
	srv *Server
	url string
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	return newFixtureSndbuf(t, opts, 0)
}

// newFixtureSndbuf is newFixture whose server sockets have a send buffer
// of sndbuf bytes (the kernel's autotuned default when 0), so that a test
// can fill one with little data.
func newFixtureSndbuf(t *testing.T, opts Options, sndbuf int) *fixture {
	t.Helper()
	return newEngineFixture(t, opts, session.Config{}, sndbuf)
}

// newEngineFixture is newFixtureSndbuf whose engine is configured by cfg
// (its Store a memory store when nil).
func newEngineFixture(t *testing.T, opts Options, cfg session.Config, sndbuf int) *fixture {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = journal.NewMemStore()
	}
	eng, err := session.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := idem.Open(filepath.Join(t.TempDir(), "requests.log"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Engine, opts.Requests = eng, idem.FileRequests(req)
	if opts.Token == "" {
		opts.Token = testToken
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	if sndbuf > 0 {
		hs.Listener = sndbufListener{hs.Listener.(*net.TCPListener), sndbuf}
	}
	hs.Start()
	t.Cleanup(func() {
		srv.Drain()
		srv.CloseStreams()
		hs.Close()
		req.Close()
	})
	return &fixture{t: t, srv: srv, url: hs.URL}
}

// sndbufListener sets the send buffer of each accepted connection.
type sndbufListener struct {
	*net.TCPListener
	size int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	if err := c.SetWriteBuffer(l.size); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// do sends a request; headers alternate name, value.
func (f *fixture) do(method, path, body string, headers ...string) (int, http.Header, []byte) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, f.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (f *fixture) create(key string) api.SessionSummary {
	f.t.Helper()
	st, _, b := f.do("POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"}}`, "Idempotency-Key", key)
	if st != 200 {
		f.t.Fatalf("create = %d %s", st, b)
	}
	var sum api.SessionSummary
	json.Unmarshal(b, &sum)
	return sum
}

// sseFrame is one parsed server-sent event.
type sseFrame struct {
	id, event, data string
	hasID           bool
}

// readFrames parses frames from r until it ends.
func readFrames(r io.Reader, each func(sseFrame) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var fr sseFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if fr.event != "" || fr.data != "" {
				if !each(fr) {
					return
				}
			}
			fr = sseFrame{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			fr.id, fr.hasID = line[4:], true
		case strings.HasPrefix(line, "event: "):
			fr.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			fr.data = line[6:]
		}
	}
}

// endedSpan waits for a span named name among those rec saw end after the
// first from, and answers it (nil after 10 s). The server ends a request's
// span once its handler returned, which may be a moment after the client
// read the whole answer.
func endedSpan(rec *tracetest.SpanRecorder, from int, name string) sdktrace.ReadOnlySpan {
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, s := range rec.Ended()[from:] {
			if s.Name() == name {
				return s
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settled waits until cond holds (false after 10 s): the server counts a
// request once its handler returned, which may be a moment after the
// client read the whole answer.
func settled(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}
