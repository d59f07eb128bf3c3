package braintest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/client"
)

// Options configure Start.
type Options struct {
	// DataDir is the data directory (default: a fresh one under
	// t.TempDir()). Starting again over the same directory recovers it.
	DataDir string
	// Token is the bearer token the API requires (empty: none).
	Token string
	// Addr is the loopback address to listen on, such as the address of
	// a Brain an earlier part of the test stopped (default: a free port).
	Addr string
	// Environments are providers served on loopback next to Brain and
	// routed under their names.
	Environments map[string]Environment
	// Logs receives Brain's JSON logs at debug level (nil: discarded).
	Logs io.Writer
	// Edit may change the configuration before Brain starts.
	Edit func(*brain.Config)
}

// Environment is an environment/v1 provider Start serves and routes.
type Environment struct {
	// Handler serves environment/v1, such as a provider's
	// Handler(APIKey).
	Handler http.Handler
	// APIKey is the credential Brain presents to the provider.
	APIKey string
	// Default makes it the default route too, for drivers without one.
	// At most one environment may be the default.
	Default bool
}

// Brain is a Brain running in-process.
type Brain struct {
	// URL is the base URL of the session API (also Brain's public URL).
	URL string
	// Token is the bearer token the API requires.
	Token string
	// DataDir is the data directory.
	DataDir string
	// Server is the running server.
	Server *brain.Server
	// Routes are the endpoints of Options.Environments by name.
	Routes map[string]string

	served   chan struct{} // closed when Serve returned
	envs     []*httptest.Server
	stopOnce sync.Once
}

// Start runs a Brain in-process over a real loopback listener: it builds
// a brain.Config from opts, calls brain.New and serves it. When the test
// ends Brain drains (bounded by 30 s), then the environments stop.
func Start(t testing.TB, opts Options) *Brain {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// Open is Start for callers without a test, such as a child process of a
// crash test: opts.DataDir is required and the caller calls Stop.
func Open(opts Options) (*Brain, error) {
	logs := opts.Logs
	if logs == nil {
		logs = io.Discard
	}
	cfg := brain.Config{
		DataDir: opts.DataDir,
		Token:   opts.Token,
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if err := oneDefault(opts.Environments); err != nil {
		return nil, err
	}
	b := &Brain{DataDir: opts.DataDir, Routes: map[string]string{}, served: make(chan struct{})}
	for name, env := range opts.Environments {
		srv := httptest.NewServer(env.Handler)
		b.envs = append(b.envs, srv)
		if cfg.Environments.Routes == nil {
			cfg.Environments.Routes = map[string]brain.EnvironmentRoute{}
		}
		cfg.Environments.Routes[name] = brain.EnvironmentRoute{Endpoint: srv.URL, APIKey: env.APIKey}
		if env.Default {
			cfg.Environments.BaseURL, cfg.Environments.APIKey = srv.URL, env.APIKey
		}
		b.Routes[name] = srv.URL
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		b.closeEnvs()
		return nil, err
	}
	b.URL = "http://" + ln.Addr().String()
	cfg.PublicURL = b.URL
	if opts.Edit != nil {
		opts.Edit(&cfg)
	}
	srv, err := brain.New(context.Background(), cfg)
	if err != nil {
		ln.Close()
		b.closeEnvs()
		return nil, err
	}
	b.Server = srv
	b.Token, _ = srv.Token()
	go func() {
		_ = srv.Serve(context.Background(), ln)
		close(b.served)
	}()
	return b, nil
}

// oneDefault refuses environments of which more than one is the default
// route: which one would serve the drivers without a route of their own
// would change from run to run.
func oneDefault(envs map[string]Environment) error {
	var defaults []string
	for _, name := range slices.Sorted(maps.Keys(envs)) {
		if envs[name].Default {
			defaults = append(defaults, strconv.Quote(name))
		}
	}
	if len(defaults) > 1 {
		return fmt.Errorf("braintest: Options.Environments %s are all Default: only one can be the default route", strings.Join(defaults, ", "))
	}
	return nil
}

// Stop drains Brain (bounded by 30 s) while its routes still serve
// provider callbacks, then stops the environments. It is idempotent.
func (b *Brain) Stop() {
	b.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = b.Server.Close(ctx)
		<-b.served
		b.closeEnvs()
	})
}

func (b *Brain) closeEnvs() {
	for _, e := range b.envs {
		e.Close()
	}
}

// Client answers a Go client of the API with Brain's token, closed with
// the test.
func (b *Brain) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(b.URL, &client.Options{Token: b.Token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
