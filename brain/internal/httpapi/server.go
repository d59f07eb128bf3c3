package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/catalog"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/hosts"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/brain/internal/ui"
	"github.com/brain-in-go/brain/internal/netutil"
)

// Defaults of Options.
const (
	DefaultMaxRequestBytes = 32 << 20
	DefaultMaxLiveBacklog  = 1024
	DefaultHeartbeat       = 15 * time.Second
)

// Options configures a Server.
type Options struct {
	// Engine runs the sessions. Required.
	Engine *session.Engine
	// Requests keeps idempotency claims and answers. Required.
	Requests idem.Requests
	// Ready, if set, must succeed for /health/ready to answer 204 (the
	// storage backend's database answers).
	Ready func(ctx context.Context) error
	// Token is the server bearer token; empty serves without
	// authentication.
	Token string
	// MaxRequestBytes bounds a request body (413); 0 selects 32 MiB.
	MaxRequestBytes int64
	// MaxLiveBacklog is how many records a stream subscriber may lag
	// before its stream ends; 0 selects 1024.
	MaxLiveBacklog int
	// Heartbeat is the interval of comment lines on idle streams; 0
	// selects 15 s.
	Heartbeat time.Duration
	// StreamWriteTimeout bounds one write to an event stream subscriber:
	// a reader that stalls longer loses its stream, cut off; 0 selects
	// 30 s.
	StreamWriteTimeout time.Duration
	// BodyReadTimeout bounds reading a request body (0: 60 s); see
	// ReadTimeout.
	BodyReadTimeout time.Duration
	// Healthy, when set, answers why durable writes are failing (nil when
	// they work); /health/ready answers 503 while it does.
	Healthy func() error
	// Logger receives request and error logs (nil: slog.Default()).
	// Logs carry methods (_OTHER for one HTTP does not define), routes,
	// statuses and session ids, never headers or bodies.
	Logger *slog.Logger
	// PrepareCreate, if set, may fill defaults (such as default
	// environments) into a validated create request before the engine runs
	// it. It must be deterministic: a replayed request is not run again.
	PrepareCreate func(ctx context.Context, req *api.CreateSessionRequest) error
	// NextSequence, if set, answers the sequence the next record of a
	// session will get (the journal's committed next); it hints async
	// submissions' idempotency claims. nil asks Engine.Summary.
	NextSequence func(ctx context.Context, id string) (uint64, error)
	// AfterClaim, if set, runs after an idempotency claim is durable and
	// before its operation runs (a fault-injection point for crash tests);
	// for a claim that rides the journal (a synchronous send), once the
	// journal commit carrying it is durable, before it is acknowledged.
	// It must not block.
	AfterClaim func(scope, key string)
	// Agentloops admits Wasm agentloops (POST and GET /v1/agentloops)
	// and, when it has a tools directory, Tools (POST and GET
	// /v1/tools); nil serves no admission routes.
	Agentloops *loophost.Host
	// Bindings authorizes the invocation and reporter tokens of
	// environment operations; with it the server serves the execution
	// callback, reporter and environment control routes.
	Bindings *envbind.Binder
	// Hosts serves host environments: registration (POST /v1/hosts) and
	// the /v1/hosts/{host_id}/... routes of each host; nil serves none.
	Hosts *hosts.Registry
	// Models is the models catalogue GET /v1/models answers; nil serves
	// no such route.
	Models *catalog.Catalog
	// Metrics serves GET /metrics behind the token; nil serves no such
	// route (the metrics may have an address of their own).
	Metrics http.Handler
	// Observer, if set, is told of requests, event streams and replayed
	// idempotent answers (for metrics).
	Observer Observer
	// Route, when set (a cluster), answers the public URL of the live
	// node that owns a session's writes, "" when this node serves them;
	// writes to a session owned elsewhere are forwarded there.
	Route func(ctx context.Context, id string) (string, error)
	// LeaseEpoch, when set (a cluster), answers the epoch of the live
	// lease on a session, whichever node holds it (0: none). A node that
	// does not own a session checks an invocation token's epoch against
	// it before forwarding the call.
	LeaseEpoch func(ctx context.Context, id string) (int64, error)
	// OwnerGone, when set (a cluster), waits until the node at a public
	// URL that Route answered is no longer a live member (answering nil)
	// or ctx ends. A write forwarded to a node that stops (SIGSTOP, a
	// hung host) is given up then, instead of waiting for an answer
	// that will not come.
	OwnerGone func(ctx context.Context, owner string) error
	// Tracer, when set, starts a server span for every request (see
	// trace.go); nil reads no trace context and starts no span.
	Tracer trace.Tracer
}

// Observer is told what the server does; its methods must not block.
type Observer interface {
	// Request reports a request's route pattern, status and duration.
	Request(route string, status int, d time.Duration)
	// Forwarded reports, in place of Request, a write another node of the
	// cluster forwarded to this one, its session's owner: the node the
	// client sent it to reports it as its Request.
	Forwarded(route string, status int, d time.Duration)
	// StreamOpened and StreamClosed bracket an event stream; lagged says
	// it ended because its subscriber fell behind.
	StreamOpened()
	StreamClosed(lagged bool)
	// IdempotencyHit reports a request answered from a stored answer.
	IdempotencyHit()
}

type noObserver struct{}

func (noObserver) Request(string, int, time.Duration)   {}
func (noObserver) Forwarded(string, int, time.Duration) {}
func (noObserver) StreamOpened()                        {}
func (noObserver) StreamClosed(bool)                    {}
func (noObserver) IdempotencyHit()                      {}

func (s *Server) observer() Observer {
	if s.opts.Observer == nil {
		return noObserver{}
	}
	return s.opts.Observer
}

// Server is the session API handler.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	patterns []string // mounted mux patterns
	tokenSum [32]byte
	log      *slog.Logger

	draining atomic.Bool
	ready    readiness // what /health/ready found last
	opsMu    sync.Mutex
	ops      int            // admitted mutations in flight
	opsZero  chan struct{}  // closed when ops drops to zero while draining
	streams  sync.WaitGroup // open event streams
	stop     context.Context
	stopAll  context.CancelFunc

	statsMu sync.Mutex
	stats   map[string]*kindStats // commit counts by request kind

	gmu   sync.Mutex
	gates map[string]*gate // sessions with a send or delete in flight

	feedsMu   sync.Mutex
	feeds     map[string]*feed     // sessions with event streams
	streamSet map[*stream]struct{} // open event streams
	// fullWrites counts stream writes a socket did not take at once.
	fullWrites atomic.Int64
	// handshakes releases the memory of a burst of stream openings.
	handshakes *burst
}

// New returns a Server with the session routes mounted.
func New(opts Options) (*Server, error) {
	if opts.Engine == nil || opts.Requests == nil {
		return nil, errors.New("httpapi: Options.Engine and Options.Requests are required")
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxLiveBacklog <= 0 {
		opts.MaxLiveBacklog = DefaultMaxLiveBacklog
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = streamWriteTimeout
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), log: opts.Logger, gates: map[string]*gate{}, stats: map[string]*kindStats{},
		feeds: map[string]*feed{}, streamSet: map[*stream]struct{}{}, handshakes: newBurst()}
	if s.log == nil {
		s.log = slog.Default()
	}
	if opts.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(opts.Token))
	}
	s.stop, s.stopAll = context.WithCancel(context.Background())
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.handleOpen("GET /health/live", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			closeUnread(w, r)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	s.handleOpen("GET /health/ready", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			closeUnread(w, r)
		}
		if s.draining.Load() {
			WriteError(w, errDraining)
			return
		}
		if s.opts.Healthy != nil {
			if err := s.opts.Healthy(); err != nil {
				s.observeReadiness(notReadyWrites, err)
				WriteError(w, errStorage)
				return
			}
		}
		if s.opts.Ready != nil {
			if err := s.opts.Ready(r.Context()); err != nil {
				if r.Context().Err() == nil {
					s.observeReadiness(notReadyStorage, err)
				}
				WriteError(w, newError(http.StatusServiceUnavailable, api.CodeOverloaded, notReadyStorage+"; retry later"))
				return
			}
		}
		s.observeReadiness("", nil)
		w.WriteHeader(http.StatusNoContent)
	}))
	s.handle("POST /v1/sessions", http.HandlerFunc(s.createSession))
	s.handle("GET /v1/sessions", http.HandlerFunc(s.listSessions))
	s.handle("GET /v1/sessions/{id}", http.HandlerFunc(s.getSession))
	s.handle("DELETE /v1/sessions/{id}", http.HandlerFunc(s.deleteSession))
	s.handle("POST /v1/sessions/{id}/messages", http.HandlerFunc(s.sendMessage))
	s.handle("GET /v1/sessions/{id}/transcript", http.HandlerFunc(s.transcript))
	s.handle("GET /v1/sessions/{id}/events", http.HandlerFunc(s.events))
	s.handle("POST /v1/sessions/{id}/cancel", http.HandlerFunc(s.cancel))
	s.handle("POST /v1/sessions/{id}/end", http.HandlerFunc(s.end))
	if s.opts.Agentloops != nil {
		s.agentloopRoutes()
		if s.opts.Agentloops.ToolsEnabled() {
			s.toolRoutes()
		}
	}
	if s.opts.Bindings != nil {
		s.environmentRoutes()
	}
	if s.opts.Hosts != nil {
		s.hostRoutes(s.opts.Hosts)
	}
	if s.opts.Metrics != nil {
		s.handle("GET /metrics", s.opts.Metrics)
	}
	if s.opts.Models != nil {
		s.handle("GET /v1/models", http.HandlerFunc(s.listModels))
	}
	s.handleOpen("GET /v1/openapi.json", http.HandlerFunc(s.serveOpenAPI))
	// The inspector's files hold no data: the page sends the token with
	// each API request it makes.
	s.handleOpen("GET "+ui.Prefix, inspector(ui.Files()))
	s.handleOpen("GET /ui", http.RedirectHandler(ui.Prefix, http.StatusMovedPermanently))
	s.mux.Handle(patternNotRouted, s.notRoutedAuth(http.HandlerFunc(s.notRouted)))
}

// handle mounts h at pattern (a ServeMux pattern) behind the server token.
// A session write that passed the token check is forwarded to the
// session's owner when that is another node.
func (s *Server) handle(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.forward(w, r) {
			h.ServeHTTP(w, r)
		}
	})))
}

// handleOpen mounts h at pattern without the server token; h
// authenticates its callers itself (invocation and reporter tokens).
func (s *Server) handleOpen(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}

// ServeHTTP implements http.Handler with request logging.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	forwarded := s.forwardedIn(r)
	sw := &statusWriter{ResponseWriter: w}
	if b := watchBody(sw, r); b != nil {
		// The server looks at the request's own body once the handler
		// returned (to tell whether it closed it early).
		defer func() { r.Body = b.ReadCloser }()
	}
	var endSpan func(aborted bool)
	if s.opts.Tracer != nil {
		r, endSpan = s.traceRequest(r, sw)
	}
	defer func() {
		// A handler that aborts its response (http.ErrAbortHandler: a
		// relayed answer or an event stream cut off half way) is still
		// counted, and its span ended, before the server drops the
		// connection.
		if p := recover(); p != nil {
			if sw.status == 0 {
				sw.status = http.StatusInternalServerError // no answer was sent
			}
			s.finishRequest(served{method: r.Method, pattern: r.Pattern, status: sw.status, err: sw.err, start: start,
				endSpan: endSpan, aborted: true, forwarded: forwarded})
			panic(p)
		}
	}()
	s.mux.ServeHTTP(sw, r)
	done := served{method: r.Method, pattern: r.Pattern, status: sw.status, err: sw.err, start: start, endSpan: endSpan,
		forwarded: forwarded}
	if st := sw.stream; st != nil {
		// An event stream served from its hijacked connection goes on
		// after its handler returned: it is counted when it ends. Only
		// what the count needs is kept meanwhile, not the request.
		st.whenClosed(func() { s.finishRequest(done) })
		return
	}
	s.finishRequest(done)
}

// served is what is counted and logged of a request once it ended.
type served struct {
	method, pattern string
	status          int
	err             error
	start           time.Time
	endSpan         func(aborted bool) // ends the request's span (nil: none)
	aborted         bool               // the response was cut off (the handler aborted it)
	forwarded       bool               // another node forwarded it here (see forwardedIn)
}

// finishRequest counts, logs and ends the span of a request that ended.
func (s *Server) finishRequest(d served) {
	if d.endSpan != nil {
		defer d.endSpan(d.aborted)
	}
	elapsed := time.Since(d.start)
	method, _ := knownMethod(d.method)
	if d.forwarded {
		s.observer().Forwarded(d.pattern, d.status, elapsed)
	} else {
		s.observer().Request(d.pattern, d.status, elapsed)
	}
	if d.status >= 500 && d.status != http.StatusServiceUnavailable {
		args := []any{"method", method, "route", d.pattern, "status", d.status, "ms", elapsed.Milliseconds()}
		if d.err != nil {
			args = append(args, "err", d.err)
		}
		if d.aborted {
			args = append(args, "aborted", true)
		}
		s.log.Warn("request", args...)
	} else if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("request", "method", method, "route", d.pattern, "status", d.status, "ms", elapsed.Milliseconds(), "aborted", d.aborted)
	}
}

// authenticate requires the bearer token when one is configured. Without
// one it answers only requests that name a loopback host: a web page the
// browser loaded from a name that an attacker's DNS then points at the
// loopback address (DNS rebinding) names that host, not a loopback one.
func (s *Server) authenticate(h http.Handler) http.Handler {
	if s.opts.Token == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !netutil.LoopbackHost(r.Host) {
				closeUnread(w, r)
				WriteError(w, errForeignHost)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 {
			closeUnread(w, r)
			WriteError(w, errUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// admit registers an admitted mutation; it answers false while draining.
// Each true answer must be followed by one call of done.
func (s *Server) admit() bool {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.ops++
	return true
}

// admitStop registers a request that only stops work (an interrupt). It
// is admitted while draining, until the drain ends the streams
// (CloseStreams); each true answer must be followed by one call of done.
func (s *Server) admitStop() bool {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	if s.stop.Err() != nil {
		return false
	}
	s.ops++
	return true
}

func (s *Server) done() {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	s.ops--
	if s.ops == 0 && s.opsZero != nil {
		close(s.opsZero)
		s.opsZero = nil
	}
}

// Drain stops admitting work: from now on mutations other than
// interrupts, new streams and /health/ready answer 503.
func (s *Server) Drain() {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	s.draining.Store(true)
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// Wait waits, after Drain, until admitted mutations have answered or ctx
// ends.
func (s *Server) Wait(ctx context.Context) error {
	s.opsMu.Lock()
	if s.ops == 0 {
		s.opsMu.Unlock()
		return nil
	}
	if s.opsZero == nil {
		s.opsZero = make(chan struct{})
	}
	done := s.opsZero
	s.opsMu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseStreams ends every open event stream, after delivering what is
// committed until nothing more arrives promptly, and waits for them.
func (s *Server) CloseStreams() {
	s.stopAll()
	stopAt := time.Now()
	for s.stopStreams(stopAt) > 0 {
		time.Sleep(stopGrace / 5)
	}
	s.streams.Wait()
}

type statusWriter struct {
	http.ResponseWriter
	status int
	err    error // what a 5xx answer reports, for the log
	// stream is the event stream that took the connection over and goes
	// on after the handler returned (see detachedTo).
	stream *stream
	// req and body are the request and its body when it announced one
	// (see watchBody).
	req  *http.Request
	body *watchedBody
}

// detachedTo records that st serves the rest of the response of w (a
// hijacked connection), if w is or wraps a *statusWriter.
func detachedTo(w http.ResponseWriter, st *stream) {
	for {
		switch x := w.(type) {
		case *statusWriter:
			x.stream = st
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return
		}
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		// A refusal the handler has not already ended the connection for
		// (closeUnread, drainAndClose) and that comes before the body was
		// read (watchBody).
		if code >= 400 && w.body != nil && !w.body.read.Load() && w.Header().Get("Connection") != "close" {
			drainAndClose(w.ResponseWriter, w.req)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
