package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/providers/workspace"
)

// workspaceRoute is the route name of the built-in workspace environment.
const workspaceRoute = "workspace"

// environments delivers environment operations for "brain serve" and runs
// the default workspace provider on a loopback port of its own.
type environments struct {
	binder *envbind.Binder

	wsListener net.Listener // nil when the workspace is off
	wsToken    string
	wsRoot     string
	wsDone     chan error
	wsStop     context.CancelFunc
}

// newEnvironments builds the binder. The workspace provider's listener is
// opened now, so its URL can be routed, but the provider itself starts in
// start, once the data directory is open.
func newEnvironments(f *serveFlags, publicURL string, log *slog.Logger) (*environments, error) {
	e := &environments{}
	routes := map[string]envbind.Route{}
	cfg := envbind.Config{
		PublicURL:        publicURL,
		BaseURL:          f.envBaseURL,
		APIKey:           f.envAPIKey,
		RoutesFile:       f.envRoutesFile,
		Routes:           routes,
		KeyFile:          filepath.Join(f.dataDir, "server-metadata", envbind.KeyFileName),
		MaxResponseBytes: f.maxEnvResponseBytes,
		ResponseTimeout:  time.Duration(f.maxEnvSecs) * time.Second,
		ConnectTimeout:   time.Duration(f.maxEnvConnectSecs) * time.Second,
		MaxRequestBytes:  f.maxRequestBytes,
		Logger:           log,
	}
	if !f.noWorkspace {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("workspace environment: %w", err)
		}
		e.wsListener = ln
		e.wsToken = randomToken()
		e.wsRoot = f.workspaceRoot
		if e.wsRoot == "" {
			e.wsRoot = filepath.Join(f.dataDir, "native-workspaces")
		}
		url := "http://" + ln.Addr().String()
		routes[workspaceRoute] = envbind.Route{Endpoint: url, APIKey: e.wsToken}
		if cfg.BaseURL == "" {
			cfg.BaseURL, cfg.APIKey = url, e.wsToken
		}
	}
	b, err := envbind.New(cfg)
	if err != nil {
		e.closeListener()
		return nil, err
	}
	e.binder = b
	return e, nil
}

// wire lets the server deliver operations and serve the environment routes.
func (e *environments) wire(cfg *brain.Config) {
	cfg.Environments = e.binder
	cfg.Mount = e.binder.Mount
}

// start runs the workspace provider.
func (e *environments) start(log *slog.Logger) error {
	if e.wsListener == nil {
		return nil
	}
	p, err := workspace.New(workspace.Options{Root: e.wsRoot, Logger: log.With("environment", workspaceRoute)})
	if err != nil {
		e.closeListener()
		return fmt.Errorf("workspace environment: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	e.wsStop, e.wsDone = stop, make(chan error, 1)
	go func() { e.wsDone <- envsdk.Serve(ctx, e.wsListener, p.Handler(e.wsToken)) }()
	return nil
}

// close stops the workspace provider and the binder; call it after the
// server drained, since providers call back while work drains.
func (e *environments) close() error {
	var errs []error
	if e.wsStop != nil {
		e.wsStop()
		if err := <-e.wsDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	} else {
		e.closeListener()
	}
	errs = append(errs, e.binder.Close())
	return errors.Join(errs...)
}

func (e *environments) closeListener() {
	if e.wsListener != nil {
		e.wsListener.Close()
	}
}

func randomToken() string {
	buf := make([]byte, 24)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
