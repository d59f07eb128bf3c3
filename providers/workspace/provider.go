package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/providers/internal/proctree"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// reapTimeout bounds how long New waits for the commands of a provider
// that is gone to die.
const reapTimeout = 5 * time.Second

// Provider is the workspace environment provider. Create it with New and
// serve it with Handler.
type Provider struct {
	envsdk.Base
	opts   Options
	store  store
	wsRoot string // <root>/workspaces

	mu       sync.Mutex
	bindings map[string]*binding
	// settingUp holds the keys whose setup is saving their state.
	settingUp map[string]struct{}

	allocations atomic.Int64 // directories created, for tests

	// weakIdentity warns once that workspaces are told by their inode
	// number alone (identity.weak).
	weakIdentity sync.Once

	lock *os.File // holds the flock of <root>/.lock; guarded by mu

	// gate admits operations until Close begins, and stops the
	// commands in flight once it has.
	gate *serve.Gate
}

var (
	_ envsdk.Provider       = (*Provider)(nil)
	_ envsdk.MethodProvider = (*Provider)(nil)
)

// New opens (creating if needed) the provider's root and loads the state of
// the bindings a previous provider left there.
func New(opts Options) (*Provider, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Provider{
		opts:     o,
		store:    store{dir: filepath.Join(o.Root, "bindings")},
		wsRoot:   filepath.Join(o.Root, "workspaces"),
		bindings: map[string]*binding{},

		settingUp: map[string]struct{}{},
		gate:      serve.NewGate(),
	}
	if err := os.MkdirAll(o.Root, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: create %s: %w", o.Root, err)
	}
	// The root is locked before anything in it is read or removed: a
	// provider running on it owns its state and workspaces.
	lock, err := lockRoot(o.Root)
	if err != nil {
		return nil, err
	}
	p.lock = lock
	if err := p.load(); err != nil {
		p.Close()
		return nil, err
	}
	// Commands of a provider that was killed before it could stop them run
	// on with nobody to enforce their deadlines: stop them now.
	ctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	if err := proctree.ReapOrphans(ctx, MarkerEnv); err != nil {
		o.Logger.Warn("stop the commands of a provider that is gone", "error", err)
	}
	// After the reap: a command left running in a directory could write
	// into it while it is removed.
	p.sweep()
	return p, nil
}

// load creates the state and workspaces directories and loads the
// bindings' state.
func (p *Provider) load() error {
	for _, dir := range []string{p.store.dir, p.wsRoot} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("workspace: create %s: %w", dir, err)
		}
	}
	// Their entries in the root are durable before any state in them
	// records a workspace.
	if err := syncDir(p.opts.Root); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	recs, err := p.store.load()
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	for _, rec := range recs {
		b, err := p.restore(rec)
		if err != nil {
			return fmt.Errorf("workspace: binding %s: %w", rec.Key, err)
		}
		p.bindings[rec.Key] = b
	}
	// Once every binding is restored, so that a start refused for one
	// writes nothing.
	for _, b := range p.bindings {
		b.strengthen()
	}
	return nil
}

// sweep removes the workspace directories no binding names: those of
// teardowns, resets and wipes a provider was killed in, or whose removal
// failed. Only names the provider makes are touched.
func (p *Provider) sweep() {
	entries, err := os.ReadDir(p.wsRoot)
	if err != nil {
		p.opts.Logger.Warn("list workspaces", "error", err)
		return
	}
	named := map[string]bool{}
	for _, b := range p.bindings {
		named[b.rec.Dir] = true
	}
	for _, e := range entries {
		if !e.IsDir() || !validDirName(e.Name()) || named[e.Name()] {
			continue
		}
		if err := removeTree(filepath.Join(p.wsRoot, e.Name())); err != nil {
			p.opts.Logger.Warn("remove a workspace no binding names", "dir", e.Name(), "error", err)
		}
	}
}

// Handler serves the provider at POST /v1/operations, requiring token as
// the bearer credential (empty: no authentication, for loopback tests).
func (p *Provider) Handler(token string) http.Handler {
	return envsdk.NewHandler(p, &envsdk.Options{Token: token, Logger: p.opts.Logger, MaxAnswerBytes: p.opts.MaxAnswerBytes})
}

// Root is the absolute directory the provider keeps its state in.
func (p *Provider) Root() string { return p.opts.Root }

func (p *Provider) lookup(key string) (*binding, error) {
	p.mu.Lock()
	b := p.bindings[key]
	p.mu.Unlock()
	if b == nil {
		return nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s is not set up (or was torn down)", key)
	}
	return b, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Setup validates the configuration and records the binding. A second
// setup of a live binding fails with already_exists.
func (p *Provider) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	leave, err := p.hold()
	if err != nil {
		return envsdk.SetupResult{}, err
	}
	defer leave()
	var cfg BindingConfig
	if err := c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	if cfg.OutputLimit > p.opts.OutputLimit {
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeInvalidConfiguration,
			"configuration.output_limit: must be at most %d, got %d", p.opts.OutputLimit, cfg.OutputLimit).
			WithDetails(map[string]string{"field": "configuration.output_limit"})
	}
	for name, value := range cfg.Env {
		if strings.ContainsRune(value, 0) {
			// No program can be given it: every command would fail.
			return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeInvalidConfiguration,
				"configuration.env: the value of %s contains a NUL byte", name).
				WithDetails(map[string]string{"field": "configuration.env"})
		}
		if !envName.MatchString(name) {
			return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeInvalidConfiguration,
				"configuration.env: %q is not a variable name", name).
				WithDetails(map[string]string{"field": "configuration.env"})
		}
		if !p.opts.allowsVariable(name) {
			return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeInvalidConfiguration,
				"configuration.env: %s is not allowed while the operator restricts the programs commands may run", name).
				WithDetails(map[string]string{"field": "configuration.env"})
		}
	}
	raw := c.RawConfiguration
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	key := c.BindingKey()
	rec := &record{
		Key: key, SessionID: c.SessionID, Environment: c.Environment, Binding: c.Binding.Sequence,
		Config: raw, Dir: newDirName(), Phase: phaseNew, Created: timeNow(),
	}
	// The state is saved outside the provider's lock, so that its sync
	// holds back no other binding; the key is reserved meanwhile.
	p.mu.Lock()
	if _, ok := p.bindings[key]; ok {
		p.mu.Unlock()
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeAlreadyExists, "binding %s is already set up", key)
	}
	if _, ok := p.settingUp[key]; ok {
		p.mu.Unlock()
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeBusy, "binding %s is being set up", key).WithRetryable(true)
	}
	p.settingUp[key] = struct{}{}
	p.mu.Unlock()
	err = p.store.save(rec)
	p.mu.Lock()
	delete(p.settingUp, key)
	if err == nil {
		p.bindings[key] = &binding{p: p, key: key, rec: *rec, cfg: cfg}
	}
	p.mu.Unlock()
	if err != nil {
		return envsdk.SetupResult{}, err
	}
	var res envsdk.SetupResult
	if cfg.ReleaseOnTurnEnd {
		res.OnTurnEnd = "release"
	}
	return res, nil
}

// Detach keeps the workspace; it fails with busy while executes run, and
// with unavailable once the binding is torn down.
func (p *Provider) Detach(c *envsdk.Ctx) error {
	leave, err := p.hold()
	if err != nil {
		return err
	}
	defer leave()
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return tornDown(b.key) // torn down meanwhile
	}
	if b.active > 0 {
		return envsdk.Failf(envapi.CodeBusy, "%d executes are running", b.active)
	}
	return nil
}

// Teardown forgets the binding and removes the workspace. Tearing down an
// unknown binding is accepted, so teardown is repeatable. The removal holds
// the binding alone, never the provider: removing a large workspace does
// not hold back the other bindings.
func (p *Provider) Teardown(c *envsdk.Ctx) error {
	leave, err := p.hold()
	if err != nil {
		return err
	}
	defer leave()
	key := c.BindingKey()
	p.mu.Lock()
	b := p.bindings[key]
	p.mu.Unlock()
	if b == nil {
		return nil
	}
	b.mu.Lock()
	if b.gone {
		// Torn down meanwhile: answered once that teardown's removal is
		// done.
		removed := b.removed
		b.mu.Unlock()
		if removed != nil {
			<-removed
		}
		return nil
	}
	if b.active > 0 {
		defer b.mu.Unlock()
		return envsdk.Failf(envapi.CodeBusy, "%d executes are running", b.active)
	}
	// The binding is forgotten on disk before its directory is removed:
	// a provider killed during the removal restarts without the binding,
	// and removes what is left of the directory (sweep), rather than
	// bringing the binding back with part of its workspace.
	if err := p.store.remove(key); err != nil {
		defer b.mu.Unlock()
		return envsdk.Failf(envapi.CodeCleanupFailed, "%v", err)
	}
	b.gone = true
	b.lazy.Reset()
	removed := make(chan struct{})
	b.removed = removed
	dir := b.dirPath()
	// The removal runs without the binding's lock: the operations that
	// arrive meanwhile answer unavailable at once, not once it is done.
	b.mu.Unlock()
	// The key stays taken until the removal is done: a setup meanwhile
	// is refused as for a binding still set up.
	err = removeWorkspace(dir)
	close(removed)
	p.mu.Lock()
	if p.bindings[key] == b {
		delete(p.bindings, key)
	}
	p.mu.Unlock()
	if err != nil {
		return envsdk.Failf(envapi.CodeCleanupFailed,
			"the binding was torn down, but its workspace could not be removed (the next start of the provider tries again): %v", err)
	}
	return nil
}

func newDirName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
