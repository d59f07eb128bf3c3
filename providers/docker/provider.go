package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/progress"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// Config configures a Provider.
type Config struct {
	// Profiles are the container shapes bindings may name (required).
	Profiles Profiles
	// StateDir holds one state file per binding (required). A provider
	// restarted on the same directory finds the bindings it created.
	StateDir string
	// Client talks to the Engine; nil connects as the DOCKER_* environment
	// says (the local socket by default), negotiating the API version.
	Client *client.Client
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// MaxAnswerBytes is the largest answer to an operation Brain takes
	// (its operator's BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES); zero means
	// Brain's default, envapi.MaxResponseBytes, and one below
	// MinAnswerBytes is refused. Reads, command outputs and lists are cut
	// to fit in it (truncated), and a larger answer is answered as the
	// failure output_limit instead.
	MaxAnswerBytes int64
	// Progress, when set, is told of each step of a binding's setup and
	// allocation (image, volume, container) as it starts and ends; it
	// must not block.
	Progress progress.Func
}

// MinAnswerBytes is the least Config.MaxAnswerBytes (--max-answer-bytes)
// the provider takes. A smaller bound holds no useful answer: not the
// failure output_limit that replaces an answer too large, nor a read with
// room for a character beside its envelope, so a caller paging through a
// file by offset would make no progress.
const MinAnswerBytes = 1 << 10

// Provider is the Docker environment provider. It is safe for concurrent
// use; see the package documentation for its behaviour.
type Provider struct {
	profiles Profiles
	cli      *client.Client
	store    *stateStore
	// fence tells the processes on the state directory which bindings
	// are in use (see fence).
	fence    *fence
	instance string
	log      *slog.Logger
	progress progress.Func
	now      func() time.Time // GC's clock; a test moves it
	// maxAnswer is Config.MaxAnswerBytes with its default.
	maxAnswer int64
	// ownerTimeout bounds each giving of an earlier version's workspace
	// to the profile's user (settleOwner); a test makes it short.
	ownerTimeout time.Duration

	// ownClient: the provider made cli, so Close closes it.
	ownClient bool
	// gate admits operations until Close begins, and stops the
	// executes in flight once it has.
	gate *serve.Gate

	mu       sync.Mutex
	bindings map[string]*binding
	owners   map[string]bool // image ID + user → volume needs a chown
}

var (
	_ envsdk.Provider = (*Provider)(nil)
	_ envsdk.Canceler = (*Provider)(nil)
)

// binding is the in-memory side of one binding.
type binding struct {
	key     string
	profile Profile
	// withdrawn: the binding's profile is no longer offered (a restart
	// with other profiles); nothing runs without its user and limits.
	withdrawn bool
	lazy      envsdk.Lazy[*allocation]

	mu       sync.Mutex
	st       *bindingState
	active   map[uint64]struct{} // sequences of executes running here
	settling bool                // setup, detach or teardown in progress
	// allocating is closed when the allocation in flight ends; nil when
	// none runs. An allocation outlives the execute that started it.
	allocating chan struct{}
	// owning is the giving of the workspace to the profile's user in
	// flight (settleOwner); nil when none runs.
	owning *owning
	// collecting is closed when the GC that removes the binding's
	// resources is done with them; nil when none does. Executes and
	// lifecycle operations wait for it before they start.
	collecting chan struct{}
	// files serializes the binding's writes and edits.
	files fileLock

	// leftovers: KillLeftovers found the container paused, so the
	// commands an earlier provider process left in it still wait there;
	// the first use that resumes it kills them (settleLeftovers), holding
	// leftoverLock until they are dead, so nothing of this provider runs
	// there before. Guarded by leftoverLock.
	leftoverLock fileLock
	leftovers    bool

	// reshape: the container was allocated by an earlier provider
	// process, whose profile of the same name may have given other
	// limits; the first execute brings it to this process's profile
	// (settleProfile). Guarded by reshapeLock.
	reshapeLock fileLock
	reshape     bool
}

// allocation returns the binding's allocation, starting it on first use.
// The allocation in flight is registered before it starts, so that detach
// and teardown see it even if this execute gives up at once.
func (p *Provider) allocation(ctx context.Context, b *binding) (*allocation, error) {
	b.mu.Lock()
	if _, _, done := b.lazy.Peek(); !done && b.allocating == nil {
		b.allocating = make(chan struct{})
	}
	b.mu.Unlock()
	a, err := b.lazy.Get(ctx, p.allocate(b))
	if _, _, done := b.lazy.Peek(); done {
		// Registered just after the allocation ended: nothing to wait for.
		b.mu.Lock()
		if b.allocating != nil {
			close(b.allocating)
			b.allocating = nil
		}
		b.mu.Unlock()
	}
	return a, err
}

// waitAllocation waits until no allocation of b is in flight, so that
// detach and teardown never race the creation of a container.
func (b *binding) waitAllocation(ctx context.Context) error {
	b.mu.Lock()
	ch := b.allocating
	b.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the allocation of %s: %w", b.key, ctx.Err())
	}
}

// New builds a provider from cfg and loads the bindings recorded in its
// state directory. It does not contact the Engine; call CheckProfiles to
// refuse profiles the Engine cannot run, GC to sweep leftovers and
// KillLeftovers to stop the commands of an earlier provider process at
// start (Command does all three).
func New(cfg Config) (*Provider, error) { return newProvider(cfg, true) }

// newProvider builds a provider; the gc command needs no profiles.
func newProvider(cfg Config, requireProfiles bool) (*Provider, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("docker: a state directory is required")
	}
	if cfg.MaxAnswerBytes < 0 {
		return nil, fmt.Errorf("docker: MaxAnswerBytes %d is negative", cfg.MaxAnswerBytes)
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = envapi.MaxResponseBytes
	}
	if cfg.MaxAnswerBytes < MinAnswerBytes {
		return nil, fmt.Errorf("docker: MaxAnswerBytes %d is below %d (MinAnswerBytes), the least that holds an answer", cfg.MaxAnswerBytes, MinAnswerBytes)
	}
	profiles := Profiles{}
	if requireProfiles || len(cfg.Profiles) > 0 {
		var err error
		if profiles, err = cfg.Profiles.normalize(); err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
	}
	store, err := openStateStore(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	cli := cfg.Client
	ownClient := cli == nil
	if ownClient {
		if cli, err = newClient(); err != nil {
			return nil, err
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sum := sha256.Sum256([]byte(store.dir))
	p := &Provider{
		profiles:  profiles,
		cli:       cli,
		ownClient: ownClient,
		gate:      serve.NewGate(),
		store:     store,
		fence:     newFence(store.dir, log),
		instance:  hex.EncodeToString(sum[:8]),
		progress:  cfg.Progress,
		log:       log,
		now:       time.Now,
		maxAnswer: cfg.MaxAnswerBytes,
		bindings:  map[string]*binding{},
		owners:    map[string]bool{},

		ownerTimeout: ownerTimeout,
	}
	states, err := store.list()
	if err != nil {
		log.Warn("some binding states could not be read", "error", err)
	}
	for _, st := range states {
		if st.Phase == phaseDeleted {
			// A tombstone an earlier version kept for a torn-down
			// binding: nothing needs it. Only a serving provider removes
			// it (the gc command may run beside one).
			if requireProfiles {
				if err := store.remove(st.Key); err != nil {
					log.Warn("remove the state of a torn-down binding", "binding", st.Key, "error", err)
				}
			}
			continue
		}
		prof, ok := profiles[st.Profile]
		if !ok && requireProfiles {
			log.Warn("binding names a profile that is no longer offered", "binding", st.Key, "profile", st.Profile)
		}
		p.bindings[st.Key] = &binding{key: st.Key, profile: prof, withdrawn: !ok, st: st, active: map[uint64]struct{}{},
			reshape: st.Phase == phaseReady}
	}
	return p, nil
}

// Instance is the value of LabelInstance on everything this provider
// creates: a digest of its state directory.
func (p *Provider) Instance() string { return p.instance }

// Client is the Engine client the provider uses.
func (p *Provider) Client() *client.Client { return p.cli }

// lookup returns the live binding of key, or unavailable.
func (p *Provider) lookup(key string) (*binding, error) {
	p.mu.Lock()
	b := p.bindings[key]
	p.mu.Unlock()
	if b == nil {
		return nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s is not set up with this provider", key)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st.Phase == phaseDeleted {
		return nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s was torn down", key)
	}
	return b, nil
}

// waitCollectionLocked waits until no GC removes the binding's resources;
// b.mu is held when it is called and when it returns.
func (b *binding) waitCollectionLocked(ctx context.Context) error {
	for b.collecting != nil {
		ch := b.collecting
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			b.mu.Lock()
			return fmt.Errorf("waiting for the GC of %s: %w", b.key, ctx.Err())
		}
		b.mu.Lock()
	}
	return nil
}

// begin registers a running execute, once no GC removes the binding's
// resources; end unregisters it.
func (b *binding) begin(ctx context.Context, seq uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.waitCollectionLocked(ctx); err != nil {
		return err
	}
	switch {
	case b.st.Phase == phaseDeleted:
		return envsdk.Failf(envapi.CodeUnavailable, "binding %s was torn down", b.key)
	case b.settling:
		return envsdk.Failf(envapi.CodeBusy, "binding %s is being detached or torn down", b.key)
	case b.withdrawn:
		return envsdk.Failf(envapi.CodeUnavailable,
			"binding %s uses profile %q, which this provider no longer offers; tear it down", b.key, b.st.Profile)
	}
	if _, dup := b.active[seq]; dup {
		return envsdk.Failf(envapi.CodeBusy, "sequence %d is already running", seq)
	}
	b.active[seq] = struct{}{}
	return nil
}

func (b *binding) end(seq uint64) {
	b.mu.Lock()
	delete(b.active, seq)
	b.mu.Unlock()
}

// settle marks the binding busy with a lifecycle operation, once no GC
// removes the binding's resources; it fails with busy while executes run.
func (b *binding) settle(ctx context.Context, what string) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.waitCollectionLocked(ctx); err != nil {
		return nil, err
	}
	if n := len(b.active); n > 0 {
		return nil, envsdk.Failf(envapi.CodeBusy, "%s of %s refused: %d execute(s) still running", what, b.key, n)
	}
	if b.settling {
		return nil, envsdk.Failf(envapi.CodeBusy, "%s of %s refused: another lifecycle operation is running", what, b.key)
	}
	b.settling = true
	return func() {
		b.mu.Lock()
		b.settling = false
		b.mu.Unlock()
	}, nil
}

func (b *binding) state() bindingState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return *b.st
}

// setPhase records a new phase durably, then in memory.
func (p *Provider) setPhase(b *binding, phase string) error {
	return p.update(b, func(st *bindingState) { st.Phase = phase })
}

// update records a change of the binding's state durably, then in memory.
func (p *Provider) update(b *binding, change func(*bindingState)) error {
	b.mu.Lock()
	next := *b.st
	b.mu.Unlock()
	change(&next)
	next.UpdatedAt = time.Now().UTC()
	if err := p.store.put(&next); err != nil {
		return err
	}
	b.mu.Lock()
	b.st = &next
	b.mu.Unlock()
	return nil
}

// allocationTimeout bounds a lazy allocation, which outlives the callers
// that wait for it.
const allocationTimeout = 2 * time.Minute

// allocate is the binding's lazy allocation: it commits the intent
// (phase allocating) before touching the Engine, so that a restart finds
// an interrupted allocation and never repeats it.
func (p *Provider) allocate(b *binding) func(context.Context) (*allocation, error) {
	return func(ctx context.Context) (*allocation, error) {
		ctx, cancel := context.WithTimeout(ctx, allocationTimeout)
		defer cancel()
		defer func() {
			b.mu.Lock()
			if b.allocating != nil {
				close(b.allocating)
				b.allocating = nil
			}
			b.mu.Unlock()
		}()
		st := b.state()
		if st.Phase == phaseNew {
			// What the allocation creates is in use until it is done,
			// even once the execute that started it has given up.
			release, err := p.fence.share(ctx, b.key)
			if err != nil {
				return nil, err
			}
			defer release()
		}
		switch st.Phase {
		case phaseReady:
			return &allocation{Container: st.resourceName(), Volume: st.resourceName()}, nil
		case phaseAllocating:
			return nil, envsdk.Failf(codeAllocationUnknown,
				"an earlier allocation of %s was interrupted; its outcome is unknown and it is not retried (tear the binding down)", b.key)
		case phaseFailed:
			return nil, envsdk.Failf(envapi.CodeAllocationFailed, "the allocation of %s failed earlier: %s", b.key, st.Error)
		case phaseDeleted:
			return nil, envsdk.Failf(envapi.CodeUnavailable, "binding %s was torn down", b.key)
		}
		if st.ImageID == "" {
			// A setup interrupted (the provider was killed) before it
			// pinned the image: nothing was allocated, so it is finished
			// here, before the allocation is committed.
			done := p.stepper("binding " + b.key)("image " + b.profile.Image)
			imageID, chown, err := p.pinImage(ctx, &st, b.profile)
			done(err)
			if err != nil {
				return nil, p.failAllocation(ctx, b, fmt.Errorf("the setup was interrupted before its image was pinned, and pinning it failed: %w", err))
			}
			st.ImageID, st.Chown, st.ChownFor, st.ChownWhole = imageID, chown, ownerFor(b.profile), true
			if err := p.update(b, func(s *bindingState) {
				s.ImageID, s.Chown, s.ChownFor, s.ChownWhole = imageID, chown, st.ChownFor, true
			}); err != nil {
				return nil, err
			}
		}
		if want, again := ownerAgain(&st, b.profile); again {
			// The volume does not exist yet: it is given, with everything
			// in it, to the user the container is made with.
			done := p.stepper("binding " + b.key)("owner of " + workspaceDir + " for user " + want)
			chown, err := p.workspaceChown(ctx, &st, st.ImageID, b.profile)
			done(err)
			if err != nil {
				if imageGone(ctx, p.cli, st.ImageID) {
					err = fmt.Errorf("the binding's image %s is no longer on the Engine (the provider never pulls; tear the binding down and set it up again): %w", st.ImageID, err)
				}
				return nil, p.failAllocation(ctx, b, fmt.Errorf("find the owner of the image's %s for user %s: %w", workspaceDir, want, err))
			}
			st.Chown, st.ChownFor, st.ChownWhole = chown, want, true
			if err := p.update(b, func(s *bindingState) { s.Chown, s.ChownFor, s.ChownWhole = chown, want, true }); err != nil {
				return nil, err
			}
		}
		if err := p.setPhase(b, phaseAllocating); err != nil {
			return nil, err
		}
		a, err := createResources(ctx, p.cli, plan{
			Step:    p.stepper("binding " + b.key),
			Profile: b.profile,
			ImageID: st.ImageID,
			Name:    st.resourceName(),
			Labels:  bindingLabels(p.instance, &st, time.Now()),
			Chown:   st.Chown,
		})
		if err != nil {
			return nil, p.failAllocation(ctx, b, err)
		}
		if err := p.setPhase(b, phaseReady); err != nil {
			return nil, err
		}
		return a, nil
	}
}

// failAllocation records a failed allocation (it stays failed), removes
// what it may have created and answers allocation_failed.
func (p *Provider) failAllocation(ctx context.Context, b *binding, err error) error {
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	cleanup := removeBinding(rctx, p.cli, p.instance, b.key)
	if perr := p.update(b, func(st *bindingState) { st.Phase, st.Error = phaseFailed, err.Error() }); perr != nil {
		p.log.Error("record failed allocation", "binding", b.key, "error", perr)
	}
	return envsdk.KeepFirst(envsdk.Failf(envapi.CodeAllocationFailed, "allocate %s: %v", b.key, err), cleanup)
}

// codeAllocationUnknown answers an execute on a binding whose allocation
// was interrupted by a provider restart.
const codeAllocationUnknown = "allocation_unknown"
