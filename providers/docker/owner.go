package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// ownerTimeout bounds the giving of an earlier version's workspace to the
// profile's user (settleOwner), which outlives the execute that starts
// it. One cut short is taken up again by the next execute, which changes
// only what the one before left to its earlier owner (chownScript), so
// that each run goes on from where the last stopped.
const ownerTimeout = 30 * time.Minute

// owning is the giving of a binding's workspace to its user in flight
// (settleOwner): done is closed once it has ended, with err its outcome;
// stop ends it early (a detach or a teardown).
type owning struct {
	done chan struct{}
	err  error
	stop context.CancelFunc
}

// settleOwner gives the write workspace of a binding that an earlier
// provider process allocated, with everything in it, to the user its
// container runs as, when its state does not record that this was done
// (ownerAgain): versions before ChownWhole gave the profile's user the
// volume's root alone, so the files the image's /workspace put there stay
// root's and the tools, which run as the profile's user, cannot change
// them. It runs the one-shot chown container a fresh allocation runs
// (chownVolume), then records the owner, so that it is done once. It is
// called once the container is known to run as the profile's user
// (settleProfile refuses it otherwise).
//
// The chown of a large workspace takes a while, and it is no part of the
// execute's command: it runs apart from the execute, as an allocation
// does, bounded by ownerTimeout and stopped by Close, a detach or a
// teardown, and the executes of the binding wait for it. An execute whose
// deadline passes (or that is cancelled) while it waits answers timeout
// (cancelled) saying that its command never started; the chown goes on,
// and a later execute finds it done or waits for it in turn. A volume
// gone wraps errLost; a chown that fails or is cut short answers
// unavailable, is not recorded, and the next execute tries again, leaving
// what it finds done as it is.
func (p *Provider) settleOwner(ctx context.Context, b *binding, a *allocation) error {
	st := b.state()
	want, again := ownerAgain(&st, b.profile)
	if !again {
		return nil
	}
	b.mu.Lock()
	o := b.owning
	if o == nil {
		gctx, leave, ok := p.gate.Enter(context.WithoutCancel(ctx))
		if !ok {
			b.mu.Unlock()
			return stoppingFailure()
		}
		gctx, cancel := context.WithTimeout(gctx, p.ownerTimeout)
		o = &owning{done: make(chan struct{}), stop: cancel}
		b.owning = o
		go func() {
			defer leave()
			defer cancel()
			err := p.giveOwner(gctx, b, a, st, want)
			b.mu.Lock()
			o.err = err
			b.owning = nil
			b.mu.Unlock()
			close(o.done)
		}()
	}
	b.mu.Unlock()
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		return stoppedBefore(ctx, "the workspace, made by an earlier version of the provider, was still being given to user "+
			want+", which goes on, or, when the provider stops, is done again by the next execute")
	}
}

// giveOwner is the work of settleOwner: it runs the chown container and
// records its outcome.
func (p *Provider) giveOwner(ctx context.Context, b *binding, a *allocation, st bindingState, want string) error {
	// Kept off the binding's resources by a gc command while it runs.
	release, err := p.fence.share(ctx, b.key)
	if err != nil {
		return err
	}
	defer release()
	// A mount of a volume the Engine does not have would create it.
	if _, err := p.cli.VolumeInspect(ctx, a.Volume); cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: volume %s no longer exists", errLost, a.Volume)
	} else if err != nil {
		return fmt.Errorf("inspect volume %s: %w", a.Volume, err)
	}
	done := p.stepper("binding " + b.key)("owner of " + workspaceDir + " for user " + want)
	err = chownVolume(ctx, p.cli, plan{
		Profile: b.profile,
		ImageID: st.ImageID,
		Name:    a.Volume,
		Labels:  bindingLabels(p.instance, &st, time.Now()),
	})
	done(err)
	if err != nil {
		if ctx.Err() != nil {
			return envsdk.Failf(envapi.CodeUnavailable,
				"binding %s: giving its workspace, made by an earlier version of the provider, to user %s was stopped (%v); the next execute goes on with it; the command never started",
				b.key, want, context.Cause(ctx))
		}
		if imageGone(ctx, p.cli, st.ImageID) {
			err = fmt.Errorf("the binding's image %s is no longer on the Engine (the provider never pulls; tear the binding down and set it up again): %w", st.ImageID, err)
		}
		return envsdk.Failf(envapi.CodeUnavailable,
			"binding %s: its workspace, made by an earlier version of the provider, could not be given to user %s: %v", b.key, want, err)
	}
	b.mu.Lock()
	gone := b.st.Phase == phaseDeleted
	b.mu.Unlock()
	if gone {
		return envsdk.Failf(envapi.CodeUnavailable, "binding %s was torn down", b.key)
	}
	if err := p.update(b, func(s *bindingState) { s.ChownFor, s.ChownWhole = want, true }); err != nil {
		return err
	}
	p.log.Info("workspace given to the profile's user", "binding", b.key, "user", want)
	return nil
}

// stopOwner stops the giving of b's workspace to its user in flight, if
// any, and waits until it has ended (its chown container removed), so
// that a detach or a teardown never races it.
func (b *binding) stopOwner(ctx context.Context) error {
	b.mu.Lock()
	o := b.owning
	b.mu.Unlock()
	if o == nil {
		return nil
	}
	o.stop()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the chown of %s to stop: %w", b.key, ctx.Err())
	}
}
