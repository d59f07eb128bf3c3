package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// BindingConfig is a binding's setup configuration.
type BindingConfig struct {
	// Profile names an operator profile; empty means "default".
	Profile string `json:"profile,omitempty" validate:"omitempty,max=64"`
}

// lifecycleTimeout bounds Engine work of setup, detach and teardown.
const lifecycleTimeout = 2 * time.Minute

// Setup validates the configuration, pins the profile's image to its ID
// and records the binding. It allocates nothing: the container and volume
// are created by the first execute.
func (p *Provider) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	_, leave, err := p.enter(c, false)
	if err != nil {
		return envsdk.SetupResult{}, err
	}
	defer leave()
	var cfg BindingConfig
	if err = c.DecodeConfiguration(&cfg); err != nil {
		return envsdk.SetupResult{}, err
	}
	name := cfg.Profile
	if name == "" {
		name = DefaultProfileName
	}
	prof, ok := p.profiles[name]
	if !ok {
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeUnsupported,
			"profile %q is not offered by this provider (offered: %s)", name, strings.Join(p.profiles.Names(), ", "))
	}
	if err := p.checkProfileCPUs(c.Context(), name, prof); err != nil {
		return envsdk.SetupResult{}, err
	}
	if err := p.checkProfileNetwork(c.Context(), name, prof); err != nil {
		return envsdk.SetupResult{}, err
	}
	key := c.BindingKey()
	now := time.Now().UTC()
	st := &bindingState{
		Key: key, SessionID: c.SessionID, Environment: c.Environment, BindingSequence: c.Binding.Sequence,
		Resource: newResourceID(), Profile: name, Phase: phaseNew, CreatedAt: now, UpdatedAt: now,
	}
	b := &binding{key: key, profile: prof, st: st, active: map[uint64]struct{}{}, settling: true}

	// Reserve the key in memory, then on disk, exclusively (a torn-down
	// binding has neither).
	p.mu.Lock()
	if p.bindings[key] != nil {
		p.mu.Unlock()
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeAlreadyExists, "binding %s is already set up", key)
	}
	p.bindings[key] = b
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		if p.bindings[key] == b {
			delete(p.bindings, key)
		}
		p.mu.Unlock()
	}
	err = p.store.create(st)
	if errors.Is(err, errStateExists) {
		if old, ok, gerr := p.store.get(key); gerr == nil && ok && old.Phase == phaseDeleted {
			// A tombstone of an earlier version that could not be
			// removed at start.
			err = p.store.put(st)
		}
	}
	if errors.Is(err, errStateExists) {
		forget()
		return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeAlreadyExists, "binding %s is already set up", key)
	}
	if err != nil {
		forget()
		return envsdk.SetupResult{}, err
	}

	ctx, cancel := context.WithTimeout(c.Context(), lifecycleTimeout)
	defer cancel()
	// The probe container of the setup is in use until it is removed.
	release, err := p.fence.share(ctx, key)
	if err != nil {
		if rerr := p.store.remove(key); rerr != nil {
			p.log.Error("forget binding after a failed setup", "binding", key, "error", rerr)
		}
		forget()
		return envsdk.SetupResult{}, err
	}
	defer release()
	done := p.stepper("binding " + key)("image " + prof.Image)
	imageID, chown, err := p.pinImage(ctx, st, prof)
	done(err)
	if err != nil {
		if rerr := p.store.remove(key); rerr != nil {
			p.log.Error("forget binding after a failed setup", "binding", key, "error", rerr)
		}
		forget()
		var missing *errImageMissing
		if errors.As(err, &missing) {
			return envsdk.SetupResult{}, envsdk.Failf(envapi.CodeNotFound, "profile %q: %v", name, err)
		}
		return envsdk.SetupResult{}, fmt.Errorf("setup %s: %w", key, err)
	}
	b.mu.Lock()
	next := *b.st
	b.mu.Unlock()
	next.ImageID, next.Chown, next.ChownFor, next.ChownWhole = imageID, chown, ownerFor(prof), true
	if err := p.store.put(&next); err != nil {
		// The setup fails: the binding's file goes too, so that nothing
		// of it is left and the setup can be tried again.
		if rerr := p.store.remove(key); rerr != nil {
			p.log.Error("forget binding after a failed setup", "binding", key, "error", rerr)
		}
		forget()
		return envsdk.SetupResult{}, err
	}
	b.mu.Lock()
	b.st = &next
	b.settling = false
	b.mu.Unlock()
	return envsdk.SetupResult{}, nil
}

// pinImage resolves the profile's image to its ID and finds out whether a
// fresh volume will need a chown for the profile's user (workspaceChown).
func (p *Provider) pinImage(ctx context.Context, st *bindingState, prof Profile) (imageID string, chown bool, err error) {
	imageID, err = resolveImage(ctx, p.cli, prof.Image)
	if err != nil {
		return "", false, err
	}
	chown, err = p.workspaceChown(ctx, st, imageID, prof)
	if err != nil {
		return "", false, err
	}
	return imageID, chown, nil
}

// workspaceChown answers whether a fresh volume of a container made from
// imageID with prof needs a chown to belong, with everything in it, to the
// profile's user, which the image's /workspace does not give it (cached
// per image and user). A
// read workspace is never chowned: nothing writes it.
func (p *Provider) workspaceChown(ctx context.Context, st *bindingState, imageID string, prof Profile) (bool, error) {
	if prof.Workspace != WorkspaceWrite {
		return false, nil
	}
	cacheKey := imageID + "|" + prof.User
	p.mu.Lock()
	chown, known := p.owners[cacheKey]
	p.mu.Unlock()
	if known {
		return chown, nil
	}
	pu, pg, err := splitUser(prof.User)
	if err != nil {
		return false, err
	}
	owned, err := workspaceOwned(ctx, p.cli, imageID, st.resourceName()+"-probe", bindingLabels(p.instance, st, time.Now()), pu, pg)
	if err != nil {
		return false, err
	}
	chown = !owned
	p.mu.Lock()
	p.owners[cacheKey] = chown
	p.mu.Unlock()
	return chown, nil
}

// ownerAgain answers whether a binding's recorded Chown must be decided
// again before its allocation, and for whom: its profile gives a write
// workspace to another user than setup decided the owner for (or the
// workspace became writable), or the file, written by an earlier version,
// does not say whom it was decided for, or says it was decided for the
// volume's root alone (which leaves the image's files in it to root).
func ownerAgain(st *bindingState, prof Profile) (want string, again bool) {
	want = ownerFor(prof)
	return want, want != "" && (st.ChownFor != want || !st.ChownWhole)
}

// ownerFor is what a binding's recorded Chown was decided for: the user
// of a write workspace, empty for a read one (nothing was decided).
func ownerFor(prof Profile) string {
	if prof.Workspace != WorkspaceWrite {
		return ""
	}
	return prof.User
}

// Detach keeps the volume and stops the container; a later execute starts
// it again. It fails with busy while executes run.
func (p *Provider) Detach(c *envsdk.Ctx) error {
	_, leave, err := p.enter(c, false)
	if err != nil {
		return err
	}
	defer leave()
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context(), lifecycleTimeout)
	defer cancel()
	done, err := b.settle(ctx, "detach")
	if err != nil {
		return err
	}
	defer done()
	release, err := p.fence.share(ctx, b.key)
	if err != nil {
		return err
	}
	defer release()
	if err := b.waitAllocation(ctx); err != nil {
		return err
	}
	if err := b.stopOwner(ctx); err != nil {
		return err
	}
	st := b.state()
	if st.Phase != phaseReady {
		return nil
	}
	return stopContainer(ctx, p.cli, st.resourceName())
}

// Teardown removes every container and volume labelled with the binding,
// whatever its recorded phase (so an interrupted allocation or a crashed
// provider leaves nothing behind), then forgets the binding: its state
// file is removed, so the state directory holds live bindings only. It is
// repeatable and accepts bindings it does not know. It fails with busy
// while executes run here, and with cleanup_failed when the Engine refuses
// a removal (the state is kept so that teardown can be repeated).
func (p *Provider) Teardown(c *envsdk.Ctx) error {
	_, leave, err := p.enter(c, false)
	if err != nil {
		return err
	}
	defer leave()
	key := c.BindingKey()
	p.mu.Lock()
	b := p.bindings[key]
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.Context(), lifecycleTimeout)
	defer cancel()
	if b != nil {
		done, err := b.settle(ctx, "teardown")
		if err != nil {
			return err
		}
		defer done()
		release, err := p.fence.share(ctx, key)
		if err != nil {
			return err
		}
		defer release()
		if err := b.waitAllocation(ctx); err != nil {
			return err
		}
		if err := b.stopOwner(ctx); err != nil {
			return err
		}
	}
	if err := removeBinding(ctx, p.cli, p.instance, key); err != nil {
		return envsdk.Failf(envapi.CodeCleanupFailed, "teardown of %s: %v", key, err)
	}
	if b == nil {
		return nil
	}
	b.lazy.Reset()
	return p.forget(b)
}

// forget removes the state of a torn-down binding, durably, then from
// memory: the binding is marked deleted, so that an operation that found
// it before answers unavailable, and dropped. The key is free for a new
// setup once Teardown returns.
func (p *Provider) forget(b *binding) error {
	if err := p.store.remove(b.key); err != nil {
		return err
	}
	b.mu.Lock()
	next := *b.st
	next.Phase = phaseDeleted
	b.st = &next
	b.mu.Unlock()
	p.mu.Lock()
	if p.bindings[b.key] == b {
		delete(p.bindings, b.key)
	}
	p.mu.Unlock()
	return nil
}

// Cancel stops an execute that this process no longer runs: one started
// before a restart may still run in the container (KillLeftovers was not
// called, or skipped its paused container), and its process group is
// found by the execute's sequence. A paused container is resumed for the
// kill, as an execute resumes it, after the leftovers KillLeftovers
// skipped in it are killed (settleLeftovers), so that none of them runs
// again. (An execute running here is stopped by the SDK through its
// context.)
func (p *Provider) Cancel(c *envsdk.Ctx, target uint64) error {
	_, leave, err := p.enter(c, false)
	if err != nil {
		return err
	}
	defer leave()
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return err
	}
	b.mu.Lock()
	_, running := b.active[target]
	st := *b.st
	b.mu.Unlock()
	if running || st.Phase != phaseReady {
		return nil
	}
	ctr := st.resourceName()
	sctx, scancel := context.WithTimeout(c.Context(), lifecycleTimeout)
	defer scancel()
	if err := p.settleLeftovers(sctx, b, &allocation{Container: ctr, Volume: ctr}); err != nil {
		if errors.Is(err, errLost) {
			return nil // nothing runs any more
		}
		return fmt.Errorf("cancel %d: %w", target, err)
	}
	ctx, cancel := context.WithTimeout(c.Context(), killBudget)
	defer cancel()
	tag := strconv.FormatUint(target, 10)
	_, _, err = killGroup(ctx, p.cli, ctr, containerUser, tag, "")
	if cerrdefs.IsConflict(err) {
		// Stopped (nothing runs) or paused: a paused one is resumed.
		resumed, rerr := resumePaused(ctx, p.cli, ctr)
		if rerr != nil {
			return fmt.Errorf("cancel %d: %w", target, rerr)
		}
		if resumed {
			_, _, err = killGroup(ctx, p.cli, ctr, containerUser, tag, "")
		}
	}
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("cancel %d: %w", target, err)
	}
	return nil
}
