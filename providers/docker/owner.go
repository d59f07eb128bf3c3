package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// settleOwner gives the write workspace of a binding that an earlier
// provider process allocated, with everything in it, to the user its
// container runs as, when its state does not record that this was done
// (ownerAgain): versions before ChownWhole gave the profile's user the
// volume's root alone, so the files the image's /workspace put there stay
// root's and the tools, which run as the profile's user, cannot change
// them. It runs the one-shot chown container a fresh allocation runs
// (chownVolume), then records the owner, so that it is done once. It is
// called once the container is known to run as the profile's user
// (settleProfile refuses it otherwise). A volume gone wraps errLost; a
// chown that fails answers unavailable, and the next execute tries again.
func (p *Provider) settleOwner(ctx context.Context, b *binding, a *allocation) error {
	st := b.state()
	want, again := ownerAgain(&st, b.profile)
	if !again {
		return nil
	}
	// A mount of a volume the Engine does not have would create it.
	if _, err := p.cli.VolumeInspect(ctx, a.Volume); cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: volume %s no longer exists", errLost, a.Volume)
	} else if err != nil {
		return fmt.Errorf("inspect volume %s: %w", a.Volume, err)
	}
	done := p.stepper("binding " + b.key)("owner of " + workspaceDir + " for user " + want)
	err := chownVolume(ctx, p.cli, plan{
		Profile: b.profile,
		ImageID: st.ImageID,
		Name:    a.Volume,
		Labels:  bindingLabels(p.instance, &st, time.Now()),
	})
	done(err)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if imageGone(ctx, p.cli, st.ImageID) {
			err = fmt.Errorf("the binding's image %s is no longer on the Engine (the provider never pulls; tear the binding down and set it up again): %w", st.ImageID, err)
		}
		return envsdk.Failf(envapi.CodeUnavailable,
			"binding %s: its workspace, made by an earlier version of the provider, could not be given to user %s: %v", b.key, want, err)
	}
	if err := p.update(b, func(s *bindingState) { s.ChownFor, s.ChownWhole = want, true }); err != nil {
		return err
	}
	p.log.Info("workspace given to the profile's user", "binding", b.key, "user", want)
	return nil
}
