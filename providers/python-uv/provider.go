package pythonuv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/progress"
	"github.com/brain-in-go/brain/providers/internal/proctree"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// Provider serves the operator's Python projects as an environment/v1
// provider. Create it with New and serve it with Handler (or
// envsdk.NewHandler).
type Provider struct {
	envsdk.Base

	log       *slog.Logger
	maxAnswer int64 // WithMaxAnswerBytes; 0: Brain's default
	progress  progress.Func
	lookPath  func(string) (string, error)
	// gate admits operations and preparations until Close begins, and
	// stops those in flight then (see Close).
	gate *serve.Gate

	mu       sync.Mutex
	s        *settings
	preps    map[string]*preparation // by installation directory
	retired  map[string]*preparation // replaced by Reload, maybe still running
	bindings map[string]struct{}     // attached bindings, by binding key
	active   map[string]int          // executes in progress, by binding key
	state    *stateStore             // nil: bindings are kept in memory only
}

// Option adjusts a Provider.
type Option func(*options)

type options struct {
	log       *slog.Logger
	lookPath  func(string) (string, error)
	progress  progress.Func
	stateDir  string
	maxAnswer int64
}

// WithLogger sends the provider's logs (preparation phases among them) to
// l; by default they are discarded.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithProgress reports each preparation phase of a project as it starts
// and ends (for a command's progress display); f must not block.
func WithProgress(f progress.Func) Option { return func(o *options) { o.progress = f } }

// WithStateDir keeps the attached bindings in dir, one file per binding,
// so that a provider started again (after a crash, an upgrade or a
// restart) serves the bindings set up before. Without it bindings are
// kept in memory, and a restarted provider answers unavailable for every
// binding set up before it, until that binding is set up again.
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// WithMaxAnswerBytes bounds the answers Handler gives to the largest Brain
// takes (its BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES): an execute whose
// result would make a larger answer fails with output_limit instead of
// being refused by Brain, and the stderr tail and output excerpt of a
// failure are cut (stderr_truncated) so that the failure fits. Zero (the
// default) selects Brain's default, envapi.MaxResponseBytes; a negative n,
// or one below MinAnswerBytes, is an error of New.
func WithMaxAnswerBytes(n int64) Option { return func(o *options) { o.maxAnswer = n } }

// New validates cfg and returns a provider. Nothing is prepared until the
// first execute of a project.
func New(cfg Config, opts ...Option) (*Provider, error) {
	o := options{lookPath: exec.LookPath}
	for _, f := range opts {
		f(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.maxAnswer < 0 {
		return nil, fmt.Errorf("pythonuv: the answer bound must not be negative (got %d)", o.maxAnswer)
	}
	if o.maxAnswer > 0 && o.maxAnswer < MinAnswerBytes {
		return nil, fmt.Errorf("pythonuv: an answer bound of %d bytes holds no failure's answer; give at least %d (MinAnswerBytes)", o.maxAnswer, MinAnswerBytes)
	}
	s, err := resolve(cfg, o.lookPath)
	if err != nil {
		return nil, err
	}
	// Invocations and preparations of a provider that was killed before
	// it could stop them run on with nobody to enforce their deadlines:
	// stop them now.
	rctx, cancel := context.WithTimeout(context.Background(), reapTimeout)
	defer cancel()
	if err := proctree.ReapOrphans(rctx, RunMarkerEnv); err != nil {
		o.log.Warn("stop the processes of a provider that is gone", "error", err)
	}
	bindings := map[string]struct{}{}
	var state *stateStore
	if o.stateDir != "" {
		if state, bindings, err = openState(o.stateDir); err != nil {
			return nil, err
		}
	}
	return &Provider{
		log:       o.log,
		maxAnswer: o.maxAnswer,
		progress:  o.progress,
		lookPath:  o.lookPath,
		gate:      serve.NewGate(),
		s:         s,
		preps:     map[string]*preparation{},
		retired:   map[string]*preparation{},
		bindings:  bindings,
		active:    map[string]int{},
		state:     state,
	}, nil
}

// Handler serves the provider with envsdk at POST /v1/operations,
// requiring token as the bearer credential (empty: no authentication,
// loopback only), its answers bounded as WithMaxAnswerBytes says.
func (p *Provider) Handler(token string) http.Handler {
	return envsdk.NewHandler(p, &envsdk.Options{Token: token, Logger: p.log, MaxAnswerBytes: p.maxAnswer})
}

// Reload replaces the configuration. The preparation of a directory is
// forgotten when no project names it any more or when what it depends on
// changed (the setup module, uv, the interpreter request, the cache, the
// environment allow-list, or the content of the directory's pyproject.toml
// and uv.lock since the preparation started); a forgotten preparation,
// failed or not, runs again on next use. A forgotten preparation still
// running is stopped while it syncs (a setup module already running is
// left to end), and the executes waiting for it wait for the preparation
// that replaces it, with the project as configured now. Executes already
// running on a forgotten installation run on undisturbed: the preparation
// that replaces it syncs the directory only once they ended. Reload
// itself never waits. A preparation
// whose installation was lost is forgotten too, so a reload prepares it
// again. Every other preparation, including a failed one, is kept: a
// failure stays failed until its configuration changes. Bindings are kept.
func (p *Provider) Reload(cfg Config) error {
	s, err := resolve(cfg, p.lookPath)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	byDir := map[string]project{}
	for _, proj := range s.projects {
		byDir[proj.dir] = proj
	}
	for dir, pr := range p.preps {
		proj, ok := byDir[dir]
		// A loss no execute met yet counts too: the operator who removed
		// an installation and reloads gets it prepared again.
		ended, _ := pr.ready()
		if ok && s.recipeFor(proj) == pr.recipe && (!ended || pr.loss() == "") {
			continue
		}
		delete(p.preps, dir)
		p.retire(pr)
		if !ended {
			// A sync still running serves a configuration that is gone:
			// it is stopped (a setup already running is left to end).
			pr.markSuperseded()
		}
		if !ended || pr.users > 0 {
			// The next preparation of the directory waits for it, and
			// for the executes running on its installation.
			p.retired[dir] = pr
		}
		p.log.Info("preparation forgotten after a configuration change", "directory", dir)
	}
	p.s = s
	return nil
}

// reapTimeout bounds how long New waits for the processes of a provider
// that is gone to die.
const reapTimeout = 5 * time.Second

// SetupConfiguration is the per-binding setup configuration. It has no
// fields: everything that matters is operator configuration. Anything but
// {} (or null) is invalid_configuration.
type SetupConfiguration struct{}

// Setup validates the binding's configuration and attaches the binding,
// recorded in the state directory (when there is one) before it answers.
// A second setup of an attached binding fails with already_exists; one
// that arrives once Close has begun, with unavailable.
func (p *Provider) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	leave, err := p.admit()
	if err != nil {
		return envsdk.SetupResult{}, err
	}
	defer leave()
	var conf SetupConfiguration
	if err := c.DecodeConfiguration(&conf); err != nil {
		return envsdk.SetupResult{}, err
	}
	key := c.BindingKey()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bindings[key]; ok {
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeAlreadyExists, "binding %s is already set up", key)
	}
	if p.state != nil {
		if err := p.state.attach(key); err != nil {
			p.log.Error("binding not recorded", "binding", key, "error", err)
			return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeEnvironmentFailed, "the binding could not be recorded in the state directory: %v", err)
		}
	}
	p.bindings[key] = struct{}{}
	return envsdk.SetupResult{}, nil
}

// Detach releases the session's attachment. Installations are shared and
// owned by the operator: nothing is removed. Once Close has begun it
// fails with unavailable and the binding stays attached.
func (p *Provider) Detach(c *envsdk.Ctx) error {
	leave, err := p.admit()
	if err != nil {
		return err
	}
	defer leave()
	key := c.BindingKey()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bindings[key]; !ok {
		return envsdk.Failf(envapi.CodeUnavailable, "binding %s is not attached", key)
	}
	if err := p.idle(key); err != nil {
		return err
	}
	if err := p.release(key); err != nil {
		return err
	}
	delete(p.bindings, key)
	return nil
}

// Teardown releases the session's attachment, like Detach, and accepts a
// binding that is already gone. Both fail with busy while executes run on
// the binding, and with unavailable once Close has begun.
func (p *Provider) Teardown(c *envsdk.Ctx) error {
	leave, err := p.admit()
	if err != nil {
		return err
	}
	defer leave()
	key := c.BindingKey()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.idle(key); err != nil {
		return err
	}
	if err := p.release(key); err != nil {
		return err
	}
	delete(p.bindings, key)
	return nil
}

// idle refuses to release binding key while executes run on it (busy):
// released, the binding would still run code its session let go of. The
// caller holds p.mu.
func (p *Provider) idle(key string) error {
	if n := p.active[key]; n > 0 {
		return envsdk.Failf(envapi.CodeBusy, "binding %s has %d execute(s) running; cancel them or wait for them to end", key, n)
	}
	return nil
}

// release removes key's record from the state directory, if there is one;
// the caller holds p.mu. A record that cannot be removed fails the
// operation, so that the binding is not served again after a restart
// though its detach or teardown was answered.
func (p *Provider) release(key string) error {
	if p.state == nil {
		return nil
	}
	if err := p.state.release(key); err != nil {
		p.log.Error("binding record not removed", "binding", key, "error", err)
		return envsdk.Failf(envapi.CodeCleanupFailed, "the binding's record could not be removed from the state directory: %v", err)
	}
	return nil
}

// begin admits an execute on binding key: it returns the settings in force
// and a function to call when the execute ends, or an error when the
// binding is not attached.
func (p *Provider) begin(key string) (*settings, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.bindings[key]; !ok {
		return nil, nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s is not attached (never set up, detached, torn down, or set up before the provider restarted): set it up", key)
	}
	p.active[key]++
	return p.s, func() {
		p.mu.Lock()
		if p.active[key]--; p.active[key] == 0 {
			delete(p.active, key)
		}
		p.mu.Unlock()
	}, nil
}

// errReloaded says that the configuration changed the project since the
// caller looked it up: the caller looks it up again.
var errReloaded = errors.New("the project's configuration was reloaded")

// preparation returns the preparation of proj's directory, starting it on
// first use. The error is stoppingFailure's once Close has begun, or
// errReloaded when a preparation would have to start but the
// configuration in force no longer configures proj so: a preparation
// started from a project as configured before a reload would run what
// the operator replaced (a setup module dropped) and hold the directory
// until the next reload.
func (p *Provider) preparation(proj project) (*preparation, error) {
	p.mu.Lock()
	pr, ok := p.preps[proj.dir]
	p.mu.Unlock()
	if ok {
		return pr, nil
	}
	// The preparation depends on the lock it syncs, which may have changed
	// since the configuration was loaded. A lock that cannot be read fails
	// the sync, which says why.
	locked, _ := lockedDigest(proj.dir)
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.preps[proj.dir]; ok {
		return pr, nil
	}
	s := p.s
	if cur, ok := s.projects[proj.name]; !ok || cur != proj {
		return nil, errReloaded
	}
	// Close stops the preparation and waits for it to end.
	ctx, leave, err := p.enter(context.Background())
	if err != nil {
		return nil, err
	}
	r := s.recipeFor(proj)
	r.locked = locked
	pr = newPreparation(proj, r)
	pr.progress = p.progress
	syncBase, supersede := context.WithCancelCause(ctx)
	pr.supersede = supersede
	prev := p.retired[proj.dir]
	delete(p.retired, proj.dir)
	p.preps[proj.dir] = pr
	go func() {
		defer leave()
		defer supersede(nil)
		pr.run(ctx, syncBase, s, proj, prev, p.log)
	}()
	return pr, nil
}

// hold admits an execute to the installation pr prepared, so that no
// later preparation syncs the directory under it: it answers a function
// to call once the execute's processes ended, or false when a Reload
// forgot pr since it ended (the execute takes the preparation that
// replaces it).
func (p *Provider) hold(pr *preparation) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.preps[pr.dir] != pr {
		return nil, false
	}
	pr.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if pr.users--; pr.users == 0 && pr.retired {
				close(pr.released)
			}
		})
	}, true
}

// retire records that a Reload forgot pr; the caller holds p.mu.
func (p *Provider) retire(pr *preparation) {
	if pr.retired {
		return
	}
	pr.retired = true
	if pr.users == 0 {
		close(pr.released)
	}
}

// Prepare runs (or joins, or reports) the preparation of the named project
// without a session: an operator can warm installations at start. The
// error is a *envsdk.Error: unsupported for an unknown project,
// preparation_failed when the preparation failed, resource_lost when its
// installation was lost, unavailable once Close has begun (Close stops
// the wait); or it wraps ctx's error.
func (p *Provider) Prepare(ctx context.Context, name string) error {
	ctx, leave, err := p.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	p.mu.Lock()
	proj, ok := p.s.projects[name]
	p.mu.Unlock()
	if !ok {
		return envsdk.Failf(envapi.CodeUnsupported, "no project %q is configured", name)
	}
	_, _, pr, release, err := p.prepared(ctx, nil, proj, func(project) func(PreparationEvent) { return func(PreparationEvent) {} })
	if release != nil {
		release()
	}
	switch {
	case err != nil && errors.Is(context.Cause(ctx), errStopping):
		return stoppingFailure()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("pythonuv: prepare %s: %w", name, err)
	case err != nil:
		return err
	}
	if why := pr.loss(); why != "" {
		return envsdk.Failf(envapi.CodeResourceLost, "the installation of project %s was lost: %s; reload the configuration to prepare it again", name, why).
			WithDetails(map[string]string{"project": name, "reason": why})
	}
	return nil
}

// preparationFailed answers the failure f of a preparation, its stderr
// tail cut to fit an answer of at most maxAnswer bytes.
func preparationFailed(f *PreparationFailure, maxAnswer int64) *envsdk.Error {
	return envsdk.Failf(envapi.CodePreparationFailed,
		"preparation of project %s failed in phase %s (%s); it is not retried until the operator changes the configuration",
		f.Project, f.Phase, f.Reason).WithDetails(fitPreparation(f, evidenceRoom(maxAnswer, nil)))
}
