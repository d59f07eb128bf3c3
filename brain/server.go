package brain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/backend"
	"github.com/brain-in-go/brain/brain/internal/catalog"
	"github.com/brain-in-go/brain/brain/internal/datadir"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/metrics"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// shutdownGrace bounds closing idle HTTP connections after the drain.
const shutdownGrace = 5 * time.Second

// Server is a Brain over one storage backend, ready to serve.
type Server struct {
	cfg       Config
	log       *slog.Logger
	token     string
	generated bool

	store    *backend.Backend
	loops    *loophost.Host
	bindings *envbind.Binder
	engine   *session.Engine
	requests *idem.Store
	api      *httpapi.Server
	metrics  *metrics.Metrics

	mu     sync.Mutex
	https  []*http.Server
	closed bool // Close stopped the listeners

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, opens its storage backend (recovering the journal,
// the idempotency answers and the sealed credentials), and builds the
// model clients, the environment bindings, the Wasm agentloop host and the
// session engine. The Server answers through Handler or Serve; Close
// drains it.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, token: cfg.Token, metrics: metrics.New()}
	if s.log == nil {
		s.log = slog.Default()
	}
	defer func() {
		if err != nil {
			_ = s.release()
		}
	}()
	if s.store, err = backend.Open(ctx, backend.Options{
		DataDir:     cfg.DataDir,
		DatabaseURL: cfg.Storage.DatabaseURL,
		Journal: journal.Options{
			MaxQueueBytes:        cfg.MaxJournalQueueBytes,
			MaxSessionQueueBytes: cfg.MaxSessionQueueBytes,
			MaxOpenFiles:         cfg.MaxJournalOpenFiles,
			OnCommit:             s.metrics.JournalCommit,
			OnDurable:            s.metrics.Durable,
		},
		Logger: s.log,
	}); err != nil {
		return nil, fmt.Errorf("brain: storage: %w", err)
	}
	if s.loops, err = loophost.Open(ctx, loophost.Options{
		Dir:                  filepath.Join(cfg.DataDir, "agentloops"),
		ToolsDir:             filepath.Join(cfg.DataDir, "tools"),
		CacheDir:             filepath.Join(cfg.DataDir, "agentloops", "cache"),
		MaxLinearMemoryBytes: cfg.Agentloops.MaxLinearMemoryBytes,
		BuiltinWasm:          cfg.Agentloops.BuiltinWasm,
		MaxInstances:         cfg.Agentloops.MaxCoreInstances,
		FilesystemAllow:      cfg.Agentloops.FilesystemAllow,
		SecretAllow:          cfg.Agentloops.SecretAllow,
	}); err != nil {
		return nil, fmt.Errorf("brain: Config.Agentloops: %w", err)
	}
	var providers *catalog.File
	if cfg.Models.ProvidersFile != "" {
		if providers, err = catalog.ReadFile(cfg.Models.ProvidersFile); err != nil {
			return nil, fmt.Errorf("brain: Config.Models.ProvidersFile: %w", err)
		}
	}
	models, err := model.New(cfg.Models.config(providers))
	if err != nil {
		return nil, fmt.Errorf("brain: Config.Models: %w", err)
	}
	modelList, err := catalog.New(providers)
	if err != nil {
		return nil, fmt.Errorf("brain: Config.Models: %w", err)
	}
	if s.bindings, err = envbind.New(cfg.Environments.config(cfg, s.store.ReporterKey, s.log)); err != nil {
		return nil, fmt.Errorf("brain: Config.Environments: %w", err)
	}
	idle := cfg.IdleTTL
	if idle < 0 {
		idle = session.KeepIdle
	}
	// The built-in environment runs Wasm Tools in front of the bindings.
	envs := s.loops.Environments(s.bindings)
	if s.engine, err = session.New(session.Config{
		Store:        s.store.Journal,
		Models:       models,
		Environments: envs,
		Secrets:      s.store.Secrets,
		Loops:        s.loops.Resolve,
		Limits:       cfg.Limits.engine(),
		IdleTTL:      idle,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	envs.Attach(s.engine)
	// The requests log opens after the engine: unanswered async
	// submissions are settled from the journal before anything is served.
	retention := cfg.RequestRetention
	switch {
	case retention == 0:
		retention = DefaultRequestRetention
	case retention < 0:
		retention = 0
	}
	if s.requests, err = s.store.OpenRequests(&idem.Options{Retention: retention, Derive: httpapi.Derive(s.engine)}); err != nil {
		return nil, fmt.Errorf("brain: storage: %w", err)
	}
	if s.token == "" && cfg.TokenFile != "" {
		if s.token, s.generated, err = operatorToken(cfg.TokenFile); err != nil {
			return nil, fmt.Errorf("brain: Config.TokenFile: %w", err)
		}
	}
	s.metrics.Sessions(s.engine.Active, func() int {
		ids, err := s.store.Journal.Sessions(context.Background())
		if err != nil {
			return 0
		}
		return len(ids)
	})
	var metricsRoute http.Handler
	if !cfg.SeparateMetrics {
		metricsRoute = s.metrics.Handler()
	}
	if s.api, err = httpapi.New(httpapi.Options{
		Engine:          s.engine,
		Requests:        s.requests,
		Token:           s.token,
		MaxRequestBytes: cfg.MaxRequestBytes,
		MaxLiveBacklog:  cfg.MaxLiveBacklog,
		Heartbeat:       cfg.Heartbeat,
		Logger:          s.log,
		PrepareCreate:   cfg.PrepareCreate,
		AfterClaim:      cfg.AfterClaim,
		NextSequence:    s.store.Journal.Next,
		Agentloops:      s.loops,
		Bindings:        s.bindings,
		Models:          modelList,
		Metrics:         metricsRoute,
		Observer:        s.metrics,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	return s, nil
}

// operatorToken answers the token saved at path, or a new one saved there
// with mode 0600.
func operatorToken(path string) (token string, generated bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, false, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	buf := make([]byte, 24)
	_, _ = rand.Read(buf)
	token = "brain_" + hex.EncodeToString(buf)
	if err := datadir.WriteFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, err
	}
	return token, true, nil
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

func (m Models) config(providers *catalog.File) model.Config {
	var endpoints []model.Endpoint
	if providers != nil {
		for _, p := range providers.Providers {
			endpoints = append(endpoints, model.Endpoint{Name: p.Name, Dialect: p.Dialect, BaseURL: p.BaseURL})
		}
	}
	return model.Config{
		Endpoints:        endpoints,
		OpenAIBaseURL:    m.OpenAIBaseURL,
		AnthropicBaseURL: m.AnthropicBaseURL,
		DefaultAPIKeys:   m.APIKeys,
		Limits: model.Limits{
			MaxOutputBytes: m.MaxOutputBytes, MaxDeltaBytes: m.MaxDeltaBytes, MaxStreamBytes: m.MaxStreamBytes,
			MaxFrameBytes: m.MaxFrameBytes, MaxErrorBytes: m.MaxErrorBytes,
			Timeout: m.Timeout, ConnectTimeout: m.ConnectTimeout,
		},
	}
}

func (e Environments) config(cfg Config, key []byte, log *slog.Logger) envbind.Config {
	routes := make(map[string]envbind.Route, len(e.Routes))
	for name, r := range e.Routes {
		routes[name] = envbind.Route{Endpoint: r.Endpoint, APIKey: r.APIKey}
	}
	return envbind.Config{
		PublicURL:        cfg.PublicURL,
		BaseURL:          e.BaseURL,
		APIKey:           e.APIKey,
		RoutesFile:       e.RoutesFile,
		Routes:           routes,
		Key:              key,
		MaxResponseBytes: e.MaxResponseBytes,
		ResponseTimeout:  e.Timeout,
		ConnectTimeout:   e.ConnectTimeout,
		MaxRequestBytes:  cfg.MaxRequestBytes,
		Logger:           log,
	}
}

// Handler answers the HTTP handler of the session API: the session,
// agentloop and environment routes.
func (s *Server) Handler() http.Handler { return s.api }

// MetricsHandler serves Brain's metrics in the Prometheus text format,
// without authentication (for Config.SeparateMetrics).
func (s *Server) MetricsHandler() http.Handler { return s.metrics.Handler() }

// Token answers the bearer token the server requires ("" for none) and
// whether it was generated into Config.TokenFile by New.
func (s *Server) Token() (token string, generated bool) { return s.token, s.generated }

// PublicURL answers the base URL handed to environments ("" until Serve
// fills it when Config.PublicURL is empty).
func (s *Server) PublicURL() string { return s.bindings.PublicURL() }

// Serve serves the API on ln until ctx ends, then drains like Close and
// answers its error; it answers nil when Close ends it first. When
// Config.PublicURL is empty, ln's address becomes the public URL.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.bindings.PublicURL() == "" {
		if err := s.bindings.SetPublicURL("http://" + ln.Addr().String()); err != nil {
			return fmt.Errorf("brain: %w", err)
		}
	}
	hs := &http.Server{
		Handler:           s.api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.https = append(s.https, hs)
	s.mu.Unlock()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("brain: %w", err)
	case <-ctx.Done():
	}
	err := s.Close(context.WithoutCancel(ctx))
	<-served
	return err
}

// Drain stops admitting work: mutations, new event streams and
// /health/ready answer 503 from now on.
func (s *Server) Drain() { s.api.Drain() }

// Close drains the server: it stops admitting work, waits until ctx ends
// for admitted turns to finish and commit and for their answers to be
// recorded, then ends event streams, stops the listeners of Serve and
// releases the storage. Environments keep reaching the routes while work
// drains. When ctx ends first, remaining work is cancelled and its
// outcome recorded. Close is idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.api.Drain()
		err := s.engine.Close(ctx)
		if werr := s.api.Wait(ctx); err == nil {
			err = werr
		}
		s.api.CloseStreams()
		s.mu.Lock()
		https := s.https
		s.closed = true
		s.mu.Unlock()
		for _, hs := range https {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			if serr := hs.Shutdown(sctx); serr != nil {
				_ = hs.Close()
			}
			cancel()
		}
		s.closeErr = errors.Join(err, s.release())
	})
	return s.closeErr
}

// release closes what New opened, in reverse order.
func (s *Server) release() error {
	var errs []error
	if s.bindings != nil {
		errs = append(errs, s.bindings.Close())
	}
	if s.requests != nil {
		errs = append(errs, s.requests.Close())
	}
	if s.loops != nil {
		errs = append(errs, s.loops.Close(context.Background()))
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}
