package brain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/datadir"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/secrets"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// NoLimit as a Limits field or Config.RequestRetention removes that bound.
const NoLimit = -1

// DefaultRequestRetention is how long idempotency answers are kept.
const DefaultRequestRetention = 24 * time.Hour

// Limits bound every turn. A zero field selects the server default
// (128 model calls, 1800 s per turn, 120 s per tool call, 1 MiB of emitted
// events); NoLimit removes the bound.
type Limits struct {
	MaxModelCalls   int
	MaxTurn         time.Duration
	MaxTool         time.Duration
	MaxEmittedBytes int64
}

// Config configures a Server. Only DataDir is required.
type Config struct {
	// DataDir is the data directory; it is created, locked and checked.
	DataDir string
	// Token is the bearer token every application route requires; empty
	// serves without authentication (the caller decides whether that is
	// safe for its listener).
	Token string
	// PublicURL is the base URL environments use for callbacks and
	// reporters.
	PublicURL string
	// Limits bound every turn.
	Limits Limits
	// IdleTTL keeps idle sessions in memory that long after create and
	// each turn; 0 releases them at once, NoLimit keeps them.
	IdleTTL time.Duration
	// RequestRetention is how long idempotency answers are kept: 0 selects
	// 24 h, NoLimit keeps them forever.
	RequestRetention time.Duration
	// MaxRequestBytes bounds request bodies (0: 32 MiB).
	MaxRequestBytes int64
	// MaxLiveBacklog is how far an event stream may lag before it ends
	// (0: 1024 records).
	MaxLiveBacklog int
	// Heartbeat is the comment interval of idle event streams (0: 15 s).
	Heartbeat time.Duration
	// MaxJournalQueueBytes bounds the journal bytes queued for the writer
	// across all sessions; an append beyond it fails fast as overloaded
	// (0: 64 MiB).
	MaxJournalQueueBytes int64
	// MaxSessionQueueBytes bounds the journal bytes queued for one session
	// (0: 8 MiB).
	MaxSessionQueueBytes int64
	// MaxJournalOpenFiles bounds the segment files the journal writer keeps
	// open between commits (0: 256).
	MaxJournalOpenFiles int
	// Logger receives structured logs (nil: slog.Default()).
	Logger *slog.Logger

	// Models opens model clients (nil: the scripted model only).
	Models model.Opener
	// Environments delivers environment/v1 operations (nil: sessions may
	// not declare environments).
	Environments session.Environments
	// PrepareCreate may fill defaults, such as default environments, into
	// a validated create request before it runs. It must be deterministic.
	PrepareCreate func(ctx context.Context, req *api.CreateSessionRequest) error
	// Mount mounts further routes (environment control, execution
	// callbacks, reporters) on the API's mux before it serves.
	Mount func(s *httpapi.Server) error
	// BuiltinWasm runs the built-in default loop as its embedded Wasm
	// build instead of natively.
	BuiltinWasm bool
	// MaxLinearMemoryBytes bounds a Wasm agentloop's linear memory (0:
	// BRAIN_MAX_LINEAR_MEMORY_BYTES, else 128 MiB).
	MaxLinearMemoryBytes int64
	// AfterClaim runs after an idempotency claim is durable and before its
	// operation runs: a fault-injection point for crash tests.
	AfterClaim func(scope, key string)
}

// Server is a running Brain over one data directory.
type Server struct {
	cfg      Config
	dir      *datadir.Dir
	store    *journal.FileStore
	requests *idem.Store
	loops    *loophost.Host
	engine   *session.Engine
	api      *httpapi.Server

	closeOnce sync.Once
	closeErr  error
}

// New opens cfg.DataDir and answers a Server ready to serve.
func New(cfg Config) (_ *Server, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("brain: Config.DataDir is required")
	}
	s := &Server{cfg: cfg}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	if s.dir, err = datadir.Open(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	if s.store, err = journal.OpenFileStore(s.dir.Path(datadir.SessionsName), &journal.Options{
		MaxQueueBytes:        cfg.MaxJournalQueueBytes,
		MaxSessionQueueBytes: cfg.MaxSessionQueueBytes,
		MaxOpenFiles:         cfg.MaxJournalOpenFiles,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	sealed, err := secrets.Open(s.dir.Path("server-metadata"))
	if err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	if s.loops, err = loophost.Open(context.Background(), loophost.Options{
		Dir:                  s.dir.Path("agentloops"),
		MaxLinearMemoryBytes: cfg.MaxLinearMemoryBytes,
		BuiltinWasm:          cfg.BuiltinWasm,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	idle := cfg.IdleTTL
	if idle < 0 {
		idle = session.KeepIdle
	}
	s.engine, err = session.New(session.Config{
		Store:        s.store,
		Models:       cfg.Models,
		Environments: cfg.Environments,
		Secrets:      sealed,
		Loops:        s.loops.Resolve,
		Limits:       cfg.Limits.engine(),
		IdleTTL:      idle,
	})
	if err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	// The requests log opens after the engine: unanswered async
	// submissions are settled from the journal before anything is served.
	retention := cfg.RequestRetention
	switch {
	case retention == 0:
		retention = DefaultRequestRetention
	case retention < 0:
		retention = 0
	}
	if s.requests, err = idem.Open(s.dir.Path("requests", "requests.log"), &idem.Options{Retention: retention, Derive: httpapi.Derive(s.engine)}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	s.api, err = httpapi.New(httpapi.Options{
		Engine:          s.engine,
		Requests:        s.requests,
		Token:           cfg.Token,
		MaxRequestBytes: cfg.MaxRequestBytes,
		MaxLiveBacklog:  cfg.MaxLiveBacklog,
		Heartbeat:       cfg.Heartbeat,
		Logger:          cfg.Logger,
		PrepareCreate:   cfg.PrepareCreate,
		AfterClaim:      cfg.AfterClaim,
		NextSequence:    s.store.Next,
	})
	if err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	if err := s.loops.Mount(s.api); err != nil {
		return nil, fmt.Errorf("brain: mount: %w", err)
	}
	if cfg.Mount != nil {
		if err := cfg.Mount(s.api); err != nil {
			return nil, fmt.Errorf("brain: mount: %w", err)
		}
	}
	return s, nil
}

func (l Limits) engine() session.Limits {
	d := session.DefaultLimits()
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return session.Limits{
		MaxModelCalls:   int(pick(int64(l.MaxModelCalls), int64(d.MaxModelCalls))),
		MaxTurn:         time.Duration(pick(int64(l.MaxTurn), int64(d.MaxTurn))),
		MaxTool:         time.Duration(pick(int64(l.MaxTool), int64(d.MaxTool))),
		MaxEmittedBytes: pick(l.MaxEmittedBytes, d.MaxEmittedBytes),
	}
}

// Handler answers the HTTP handler of the session API.
func (s *Server) Handler() http.Handler { return s.api }

// Drain stops admitting work: mutations, new event streams and
// /health/ready answer 503 from now on.
func (s *Server) Drain() { s.api.Drain() }

// Close drains the server: it stops admitting work, waits until ctx ends
// for admitted turns to finish and commit and for their answers to be
// recorded, then ends event streams and releases the data directory.
// When ctx ends first, remaining work is cancelled and its outcome
// recorded. Close is idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.api.Drain()
		err := s.engine.Close(ctx)
		if werr := s.api.Wait(ctx); err == nil {
			err = werr
		}
		s.api.CloseStreams()
		s.closeErr = errors.Join(err, s.release())
	})
	return s.closeErr
}

// release closes what New opened, in reverse order.
func (s *Server) release() error {
	var errs []error
	if s.requests != nil {
		errs = append(errs, s.requests.Close())
	}
	if s.loops != nil {
		errs = append(errs, s.loops.Close(context.Background()))
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.dir != nil {
		errs = append(errs, s.dir.Close())
	}
	return errors.Join(errs...)
}
