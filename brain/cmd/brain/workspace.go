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

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/providers/workspace"
)

// workspaceRoute is the route name of the built-in workspace environment.
const workspaceRoute = "workspace"

// builtinWorkspace is the workspace provider "brain serve" runs on a
// loopback port of its own and routes as "workspace" (and as the default
// route unless one is configured).
type builtinWorkspace struct {
	ln    net.Listener
	token string
	root  string
	// maxAnswer is Brain's bound on an environment's answer: the
	// provider cuts what it answers to fit it rather than make answers
	// Brain refuses.
	maxAnswer int64
	p         *workspace.Provider
	done      chan error
	stop      context.CancelFunc
	// abort ends the context of every operation, running or to come.
	abort context.CancelFunc
}

// openWorkspace opens the provider's listener and routes it in cfg; the
// provider itself starts in start, once Brain opened the data directory.
func openWorkspace(f *serveFlags, cfg *brain.Config) (*builtinWorkspace, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("workspace environment: %w", err)
	}
	w := &builtinWorkspace{ln: ln, token: randomToken(), root: f.workspaceRoot, maxAnswer: f.maxEnvResponseBytes}
	if w.root == "" {
		w.root = filepath.Join(f.dataDir, "native-workspaces")
	}
	url := "http://" + ln.Addr().String()
	if cfg.Environments.Routes == nil {
		cfg.Environments.Routes = map[string]brain.EnvironmentRoute{}
	}
	cfg.Environments.Routes[workspaceRoute] = brain.EnvironmentRoute{Endpoint: url, APIKey: w.token}
	if cfg.Environments.BaseURL == "" {
		cfg.Environments.BaseURL, cfg.Environments.APIKey = url, w.token
	}
	return w, nil
}

// start runs the provider. When it fails, the listener is left to close.
func (w *builtinWorkspace) start(log *slog.Logger) error {
	// Its lines name the provider, not the environment: "environment"
	// is the session's environment on each operation's line.
	p, err := workspace.New(workspace.Options{Root: w.root, MaxAnswerBytes: w.maxAnswer, Logger: log.With("provider", workspaceRoute)})
	if err != nil {
		return fmt.Errorf("workspace environment: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	aborted, abort := context.WithCancel(context.Background())
	w.p, w.stop, w.abort, w.done = p, stop, abort, make(chan error, 1)
	go func() { w.done <- envsdk.Serve(ctx, w.ln, abortable(aborted, p.Handler(w.token))) }()
	return nil
}

// abortable serves h with request contexts that also end when aborted
// does.
func abortable(aborted context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(aborted, cancel)()
		h.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// abortOperations ends the provider's operations at once, running ones
// (their commands are killed) and any still to come, for a forced exit:
// close then need not wait for them.
func (w *builtinWorkspace) abortOperations() {
	if w != nil && w.abort != nil {
		w.abort()
	}
}

// close stops the provider; call it after Brain drained, since providers
// call back while work drains.
func (w *builtinWorkspace) close() error {
	if w == nil {
		return nil
	}
	if w.stop == nil {
		return w.ln.Close()
	}
	w.stop()
	err := <-w.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, w.p.Close())
}

func randomToken() string {
	buf := make([]byte, 24)
	_, _ = rand.Read(buf)
	return hex.EncodeToString(buf)
}
