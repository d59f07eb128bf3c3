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
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/internal/backend"
	"github.com/brain-in-go/brain/brain/internal/catalog"
	"github.com/brain-in-go/brain/brain/internal/datadir"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/hosts"
	"github.com/brain-in-go/brain/brain/internal/httpapi"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/metrics"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/fsutil"

	// The PostgreSQL backend, selected by a postgres:// database URL.
	"github.com/brain-in-go/brain/brain/internal/pgstore"
)

// refusedSealingKey answers the *ConfigError of Storage.SealingKeyFile
// when err refuses the key file for its mode or its content (a file others
// may read, too few or too many bytes): a setting to correct, like any
// other refused one. A file that cannot be read is a failure to serve
// instead, and answers nil.
func refusedSealingKey(err error) *ConfigError {
	var unreadable *fs.PathError
	if !errors.Is(err, pgstore.ErrSealingKey) || errors.As(err, &unreadable) {
		return nil
	}
	return settingError("Storage.SealingKeyFile", err)
}

// shutdownGrace bounds closing HTTP connections after the drain, within
// Close's context.
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
	hosts    *hosts.Registry
	engine   *session.Engine
	census   *storedCensus // the file backend's count of stored sessions
	requests idem.Requests
	api      *httpapi.Server
	metrics  *metrics.Metrics
	telem    *telemetry.Pipeline

	mu     sync.Mutex
	https  []*http.Server
	closed bool // Close stopped the listeners

	stopVerify context.CancelFunc
	verified   chan struct{}

	closeOnce sync.Once
	closeErr  error

	// stopTracing flushes and stops the span export.
	stopTracing tracing.Shutdown
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
			_ = s.release(context.Background())
		}
	}()
	traceSettings := cfg.OTLP.settings(s.log)
	traceSettings.SpansDropped = s.metrics.SpansDropped
	tp, stopTracing, err := tracing.NewTracerProvider(ctx, traceSettings)
	if err != nil {
		return nil, fmt.Errorf("brain: Config.OTLP: %w", err)
	}
	s.stopTracing = stopTracing
	var tracer trace.Tracer
	if tp != nil {
		tracer = tp.Tracer(tracing.InstrumentationName)
	}
	// The settings read from files, and the environment routes, are
	// checked before the data directory is touched.
	var providers *catalog.File
	if cfg.Models.ProvidersFile != "" {
		if providers, err = catalog.ReadFile(cfg.Models.ProvidersFile); err != nil {
			if errors.Is(err, catalog.ErrInvalid) {
				return nil, settingError("Models.ProvidersFile", err)
			}
			return nil, fmt.Errorf("brain: Config.Models.ProvidersFile: %w", err)
		}
	}
	mcfg := cfg.Models.config(providers)
	mcfg.Propagate = tracer != nil
	models, err := model.New(mcfg)
	if err != nil {
		return nil, fmt.Errorf("brain: Config.Models: %w", err)
	}
	modelList, err := catalog.New(providers)
	if err != nil {
		return nil, fmt.Errorf("brain: Config.Models: %w", err)
	}
	envCheck := cfg.Environments.config(cfg, nil, s.log)
	if err := envCheck.Check(); err != nil {
		var se *envbind.SettingError
		if errors.As(err, &se) {
			field := "Environments." + se.Field
			if se.Field == "PublicURL" {
				field = se.Field
			}
			return nil, settingError(field, se.Err)
		}
		return nil, fmt.Errorf("brain: Config.Environments: %w", err)
	}
	if cfg.Environments.RoutesFile != "" {
		routes, err := envbind.LoadRoutes(cfg.Environments.RoutesFile)
		if err != nil {
			return nil, fmt.Errorf("brain: Config.Environments: %w", err)
		}
		if problems := cfg.Environments.routesFileProblems(routes); len(problems) > 0 {
			return nil, &ConfigError{Problems: problems}
		}
	}
	// An allow list naming a directory that is not there (a mistyped
	// path) is a setting to correct, named as the other refused ones.
	if err := loophost.CheckGrants(cfg.Agentloops.FilesystemAllow, nil); err != nil {
		return nil, settingError("Agentloops.FilesystemAllow", err)
	}
	if err := loophost.CheckGrants(nil, cfg.Agentloops.SecretAllow); err != nil {
		return nil, settingError("Agentloops.SecretAllow", err)
	}
	if s.telem, err = openTelemetry(ctx, cfg.Telemetry, cfg.OTLP, s.log); err != nil {
		return nil, err
	}
	s.metrics.Telemetry(s.telem.Stats)
	if err = checkDataDirMode(cfg.DataDir); err != nil {
		return nil, err
	}
	if s.store, err = backend.Open(ctx, backend.Options{
		DataDir:        cfg.DataDir,
		DatabaseURL:    cfg.Storage.DatabaseURL,
		SealingKeyFile: cfg.Storage.SealingKeyFile,
		PublicURL:      cfg.PublicURL,
		Lease:          cfg.Storage.Lease,
		Journal: journal.Options{
			MaxQueueBytes:        cfg.MaxJournalQueueBytes,
			MaxSessionQueueBytes: cfg.MaxSessionQueueBytes,
			MaxOpenFiles:         cfg.MaxJournalOpenFiles,
			OnCommit:             s.metrics.JournalCommit,
			OnDurable:            s.metrics.Durable,
		},
		Logger: s.log,
	}); err != nil {
		if refused := refusedSealingKey(err); refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("brain: storage: %w", err)
	}
	if s.loops, err = loophost.Open(ctx, loophost.Options{
		Dir:                  filepath.Join(cfg.DataDir, "agentloops"),
		ToolsDir:             filepath.Join(cfg.DataDir, "tools"),
		CacheDir:             filepath.Join(cfg.DataDir, "agentloops", "cache"),
		MaxLinearMemoryBytes: cfg.Agentloops.MaxLinearMemoryBytes,
		BuiltinWasm:          cfg.Agentloops.BuiltinWasm,
		MaxInstances:         cfg.Agentloops.MaxCoreInstances,
		MaxScratchBytes:      cfg.Agentloops.MaxScratchBytes,
		FilesystemAllow:      cfg.Agentloops.FilesystemAllow,
		SecretAllow:          cfg.Agentloops.SecretAllow,
		Shared:               sharedModules(s.store.Modules),
		SharedTools:          sharedModules(s.store.Tools),
		Tracer:               tracer,
	}); err != nil {
		return nil, fmt.Errorf("brain: Config.Agentloops: %w", err)
	}
	bcfg := cfg.Environments.config(cfg, s.store.ReporterKey, s.log)
	if s.store.Ownership != nil {
		bcfg.Epoch = s.store.Ownership.Held
	}
	bcfg.Tracer = tracer
	if s.bindings, err = envbind.New(bcfg); err != nil {
		return nil, fmt.Errorf("brain: Config.Environments: %w", err)
	}
	if s.hosts, err = hosts.Open(hosts.Config{
		Dir:         filepath.Join(cfg.DataDir, hosts.DirName),
		MaxHosts:    cfg.Hosts.MaxHosts,
		MaxCommands: cfg.Hosts.MaxCommands,
		Unconnected: cfg.Hosts.Unconnected,
		Logger:      s.log,
		Tracer:      tracer,
	}); err != nil {
		return nil, fmt.Errorf("brain: Config.Hosts: %w", err)
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
		Environments: hosts.Route(s.hosts, envs),
		Secrets:      s.store.Secrets,
		Loops:        s.loops.Resolve,
		Limits:       cfg.Limits.engine(),
		IdleTTL:      idle,
		Ownership:    s.store.Ownership,
		Tracer:       tracer,
		Telemetry:    s.telem,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	if s.store.OnLeaseLost != nil {
		s.store.OnLeaseLost(s.engine.Lost)
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
	if s.requests, err = s.store.OpenRequests(&idem.Options{Retention: retention, Derive: httpapi.Derive(s.engine)}); err != nil {
		return nil, fmt.Errorf("brain: storage: %w", err)
	}
	if s.token == "" && cfg.TokenFile != "" {
		if s.token, s.generated, err = operatorToken(cfg.TokenFile); err != nil {
			if errors.Is(err, errTokenUnsendable) {
				return nil, settingError("TokenFile", err)
			}
			return nil, fmt.Errorf("brain: Config.TokenFile: %w", err)
		}
	}
	var passivated func() int
	if s.store.Passivated == nil {
		// The file backend's: the sessions on disk less those in memory.
		s.census = &storedCensus{list: s.store.Journal.Sessions, log: s.log, every: storedEvery}
		passivated = func() int { return max(s.census.count()-s.engine.Active(), 0) }
	} else {
		// A cluster's: the sessions no node holds, counted by the
		// database (the last count while it does not answer).
		passivated = func() int {
			n, _ := s.store.Passivated(context.Background())
			return n
		}
	}
	s.metrics.Sessions(s.engine.Active, passivated)
	var metricsRoute http.Handler
	if !cfg.SeparateMetrics {
		metricsRoute = s.metrics.Handler()
	}
	if s.api, err = httpapi.New(httpapi.Options{
		Engine:          s.engine,
		Requests:        s.requests,
		Ready:           s.store.Ready,
		Token:           s.token,
		MaxRequestBytes: cfg.MaxRequestBytes,
		BodyReadTimeout: cfg.BodyReadTimeout,
		MaxLiveBacklog:  cfg.MaxLiveBacklog,
		Heartbeat:       cfg.Heartbeat,
		Logger:          s.log,
		PrepareCreate:   cfg.PrepareCreate,
		AfterClaim:      cfg.AfterClaim,
		NextSequence:    s.store.Journal.Next,
		Agentloops:      s.loops,
		Bindings:        s.bindings,
		Hosts:           s.hosts,
		Healthy:         s.healthy,
		Models:          modelList,
		Metrics:         metricsRoute,
		Observer:        s.metrics,
		Route:           s.store.Route,
		LeaseEpoch:      s.store.LeaseEpoch,
		OwnerGone:       s.store.NodeGone,
		Tracer:          tracer,
	}); err != nil {
		return nil, fmt.Errorf("brain: %w", err)
	}
	vctx, cancel := context.WithCancel(context.Background())
	s.stopVerify, s.verified = cancel, make(chan struct{})
	go s.verifyJournals(vctx)
	return s, nil
}

// sharedModules answers the backend's module store as the Wasm host's
// (nil stays nil, not a nil-valued interface).
func sharedModules(m backend.SharedModules) loophost.SharedModules {
	if m == nil {
		return nil
	}
	return m
}

// healthy answers why durable writes are failing, nil when they work:
// /health/ready answers 503 while it is not nil.
func (s *Server) healthy() error {
	var errs []error
	if h, ok := s.store.Journal.(interface{ Healthy() error }); ok {
		errs = append(errs, h.Healthy())
	}
	if h, ok := s.requests.(interface{ Healthy() error }); ok {
		errs = append(errs, h.Healthy())
	}
	return errors.Join(errs...)
}

// verifyJournals checks every session's journal once after start, the
// prefixes checkpoints vouch for included, and logs each damaged session
// with its file and offset, then one line listing them all. A damaged
// session is refused by the journal from then on; until its check, it is
// still checked before anything is appended to it. Backends whose journal
// cannot verify (it checks every record on open) are skipped.
func (s *Server) verifyJournals(ctx context.Context) {
	defer close(s.verified)
	v, ok := s.store.Journal.(interface {
		Verify(ctx context.Context, id string) error
	})
	if !ok {
		return
	}
	ids, err := s.store.Journal.Sessions(ctx)
	if err != nil {
		s.log.Warn("journal check: list sessions", "err", err)
		return
	}
	var damaged []string
	for _, id := range ids {
		err := v.Verify(ctx, id)
		if ctx.Err() != nil {
			return
		}
		var de *journal.DamagedError
		switch {
		case errors.As(err, &de):
			damaged = append(damaged, id)
			s.log.Error("session journal damaged; the session is refused", "session", id, "file", de.File, "offset", de.Offset, "reason", de.Reason)
		case err != nil && !errors.Is(err, journal.ErrNotFound):
			s.log.Warn("journal check", "session", id, "err", err)
		}
	}
	if len(damaged) > 0 {
		s.log.Error("damaged sessions", "count", len(damaged), "sessions", strings.Join(damaged, " "))
		return
	}
	s.log.Info("journals checked", "sessions", len(ids))
}

// errTokenUnsendable refuses a saved operator token no request can send.
var errTokenUnsendable = errors.New("operator token cannot be sent")

// maxTokenFileBytes bounds the operator token file: one longer, or one
// that is not a regular file (a named pipe, a device), is refused rather
// than held in memory or waited on.
const maxTokenFileBytes = 4096

// readTokenFile reads the operator token file at path and answers its
// content with the mode of the file read.
func readTokenFile(path string) ([]byte, fs.FileInfo, error) {
	f, fi, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, nil, fmt.Errorf("operator token file: %w", err)
	}
	defer f.Close()
	b, err := fsutil.ReadBounded(f, path, maxTokenFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("operator token file: %w", err)
	}
	return b, fi, nil
}

// operatorToken answers the token saved at path, or a new one saved there
// with mode 0600.
func operatorToken(path string) (token string, generated bool, err error) {
	b, fi, err := readTokenFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			// The token is the server's one credential: a copy others may
			// read (restored without its mode) is not served, as a
			// sealing key's is not.
			if m := fi.Mode(); runtime.GOOS != "windows" && m.Perm()&0o077 != 0 {
				return "", false, fmt.Errorf("%s has mode %v; the operator token must be in a file only its owner can read and write (chmod 600 %s)", path, m, path)
			}
			// No Authorization header carries a control character: such
			// a token would answer every request 401.
			if strings.ContainsFunc(t, unicode.IsControl) {
				return "", false, fmt.Errorf("%w: the token saved in %s holds a control character; correct the file, or remove it to have a new token generated", errTokenUnsendable, path)
			}
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
	// The connection bounds of httpapi/conn.go: headers, the whole
	// request read, idle keep-alive, and open connections.
	hs := &http.Server{
		Handler:           s.api,
		ReadHeaderTimeout: httpapi.ReadHeaderTimeout,
		ReadTimeout:       httpapi.ReadTimeout(s.cfg.BodyReadTimeout),
		IdleTimeout:       httpapi.IdleTimeout,
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
	go func() { served <- hs.Serve(httpapi.LimitListener(ln, s.cfg.MaxConnections)) }()
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
// /health/ready answer 503 from now on. An interrupt is still accepted
// (it stops work that the drain waits for), and so is a registered host's
// commands stream (the callback of the host tools of admitted turns).
func (s *Server) Drain() { s.api.Drain() }

// Close drains the server: it stops admitting work, waits until ctx ends
// for admitted turns, tools still running after they returned (and the
// activations their results wake) and turn-end cleanups to finish and
// commit and for their answers to be
// recorded, then ends event streams, stops the listeners of Serve and
// releases the storage. Environments keep reaching the routes while work
// drains. When ctx ends first, remaining work is cancelled and its
// outcome recorded, and the connections of requests still in flight are
// cut. The telemetry records and spans still to be exported
// are flushed together within what is left of ctx (at most 5 s); what
// a collector did not take by then is dropped and said in the log, and
// does not fail Close. Close is idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if s.stopVerify != nil {
			s.stopVerify()
			<-s.verified
		}
		s.api.Drain()
		err := s.engine.Close(ctx)
		if werr := s.api.Wait(ctx); err == nil {
			err = werr
		}
		s.api.CloseStreams()
		s.hosts.Close()
		s.mu.Lock()
		https := s.https
		s.closed = true
		s.mu.Unlock()
		// Requests still in flight (a body still arriving, an answer
		// still being written) get what is left of ctx, within
		// shutdownGrace; their connections are cut after that.
		sctx, cancel := context.WithTimeout(ctx, shutdownGrace)
		var wg sync.WaitGroup
		for _, hs := range https {
			wg.Go(func() {
				if serr := hs.Shutdown(sctx); serr != nil {
					_ = hs.Close()
				}
			})
		}
		wg.Wait()
		cancel()
		s.closeErr = errors.Join(err, s.release(ctx))
	})
	return s.closeErr
}

// release closes what New opened, in reverse order. The telemetry records
// and the spans still buffered are exported together, within ctx and
// shutdownGrace.
func (s *Server) release(ctx context.Context) error {
	var errs []error
	if s.hosts != nil {
		errs = append(errs, s.hosts.Close())
	}
	if s.bindings != nil {
		errs = append(errs, s.bindings.Close())
	}
	if s.requests != nil {
		errs = append(errs, s.requests.Close())
	}
	if s.loops != nil {
		errs = append(errs, s.loops.Close(context.Background()))
	}
	errs = append(errs, s.flushExports(ctx))
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}

// flushExports closes the telemetry pipeline and stops the span export
// at once, both within ctx and no longer than shutdownGrace: a collector
// that is down or does not answer must not hold the shutdown. What they
// could not export is dropped (the telemetry records counted so) and said
// in the log; it does not fail the shutdown.
func (s *Server) flushExports(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, shutdownGrace)
	defer cancel()
	var wg sync.WaitGroup
	var telemErr error
	if s.telem != nil {
		wg.Go(func() {
			err := s.telem.Close(ctx)
			if err != nil && ctx.Err() != nil {
				// The records still queued are written, and dropped when
				// they cannot be, after Close returns.
				s.log.Warn("telemetry flush at shutdown cut short", "err", err)
				err = nil
			}
			telemErr = err
		})
	}
	if s.stopTracing != nil {
		wg.Go(func() {
			if err := s.stopTracing(ctx); err != nil {
				logExportShutdown(s.log, "trace export at shutdown", "spans_dropped", err)
			}
		})
	}
	wg.Wait()
	return telemErr
}

// CommitStats counts the durable commits of one request kind.
type CommitStats struct {
	// Requests is how many requests of the kind ran (replays and refused
	// requests are not counted).
	Requests int64
	// BeforeAnswer sums the commits those requests waited on before
	// their answers were sent.
	BeforeAnswer int64
	// Total adds the commits made for them after their answers (the turn
	// of an async submission).
	Total int64
}

// CommitStats answers, by request kind (idempotency scope, e.g.
// "send_message" or "send_message.async"), how many requests ran and how
// many durable commits (journal appends and idempotency-log flushes) they
// waited on. The tests hold the server to the commit budget of
// RATIONALE.md with it.
func (s *Server) CommitStats() map[string]CommitStats {
	in := s.api.CommitStats()
	out := make(map[string]CommitStats, len(in))
	for k, v := range in {
		out[k] = CommitStats{Requests: v.Requests, BeforeAnswer: v.BeforeAnswer, Total: v.Total}
	}
	return out
}
