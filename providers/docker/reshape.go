package docker

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// settleProfile brings the container of a binding that an earlier
// provider process allocated to the binding's profile as this process
// has it, before anything of this process runs there: the operator may
// have changed the profile between the two. Its memory (and swap), pids
// and CPU limits are updated in place, as docker update does: the
// container, its /tmp and its workspace are kept. What cannot change in
// a container that exists (its network, user, workspace mount and the
// size of /tmp) refuses the execute with unavailable naming what differs,
// until the binding is torn down or the profile gives it back; running on
// with it would keep the container looser than the operator now asks
// (a network, a writable workspace). A write workspace whose state does
// not record it given wholly to the user is given to it (settleOwner).
// The image stays the one pinned at
// setup whatever the profile names now, as for any binding. Once the
// container matches, it is not asked again in this process; a refusal is
// asked again on the next execute.
func (p *Provider) settleProfile(ctx context.Context, b *binding, a *allocation) error {
	if err := b.reshapeLock.lock(ctx); err != nil {
		return err
	}
	defer b.reshapeLock.unlock()
	if !b.reshape {
		return nil
	}
	info, err := p.cli.ContainerInspect(ctx, a.Container)
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: container %s no longer exists", errLost, a.Container)
	case err != nil:
		return fmt.Errorf("inspect container %s: %w", a.Container, err)
	case info.ContainerJSONBase == nil || info.HostConfig == nil || info.Config == nil:
		return fmt.Errorf("inspect container %s: the Engine gave no configuration", a.Container)
	}
	profile := b.state().Profile
	if fixed := fixedChanges(info.Config, info.HostConfig, b.profile); len(fixed) > 0 {
		return envsdk.Failf(envapi.CodeUnavailable,
			"binding %s: profile %q now gives another %s than its container was made with, which a container that exists cannot change; "+
				"tear the binding down (its workspace goes with it), or give the profile its former %s",
			b.key, profile, strings.Join(fixed, ", "), strings.Join(fixed, ", "))
	}
	res, changed, err := p.limitUpdate(ctx, info.HostConfig.Resources, b.profile)
	if err != nil {
		return err
	}
	if changed {
		if _, err := p.cli.ContainerUpdate(ctx, a.Container, container.UpdateConfig{Resources: res}); err != nil {
			switch {
			case ctx.Err() != nil:
				// Cut short by the execute's stop: no refusal of the
				// Engine's (the execute answers the stop).
				return fmt.Errorf("update container %s: %w", a.Container, err)
			case cerrdefs.IsNotFound(err):
				return fmt.Errorf("%w: container %s: %v", errLost, a.Container, err)
			}
			return envsdk.Failf(envapi.CodeUnavailable,
				"binding %s: the Engine refused to give its container the limits profile %q now has: %v", b.key, profile, err)
		}
		p.log.Info("container limits brought to the profile", "binding", b.key, "profile", profile)
	}
	if err := p.settleOwner(ctx, b, a); err != nil {
		return err
	}
	b.reshape = false
	return nil
}

// fixedChanges names what the container (cfg, hc) was made with that
// prof gives otherwise and no update can change. What the container does
// not tell is taken as unchanged.
func fixedChanges(cfg *container.Config, hc *container.HostConfig, prof Profile) []string {
	var fixed []string
	if string(hc.NetworkMode) != prof.Network {
		fixed = append(fixed, "network")
	}
	if cfg.User != prof.User {
		fixed = append(fixed, "user")
	}
	for _, m := range hc.Mounts {
		if m.Target == workspaceDir && m.ReadOnly != (prof.Workspace == WorkspaceRead) {
			fixed = append(fixed, "workspace")
		}
	}
	if size, ok := tmpfsSize(hc.Tmpfs[tmpDir]); ok {
		if want, _ := tmpfsSize(tmpfsOptions(prof)); size != want {
			fixed = append(fixed, "tmpfs_mb")
		}
	}
	return fixed
}

// tmpfsSize is the size option of a tmpfs's options.
func tmpfsSize(opts string) (string, bool) {
	for _, o := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			return v, true
		}
	}
	return "", false
}

// limitUpdate answers the resources that give a container with limits
// have the limits of prof, and whether any differs. An update cannot take
// a CPU bound away (the Engine leaves it as it is when asked for none), so
// a profile without one gets the bound of all the Engine's CPUs, which
// bounds nothing.
func (p *Provider) limitUpdate(ctx context.Context, have container.Resources, prof Profile) (container.Resources, bool, error) {
	mem := prof.MemoryMB << 20
	pids := prof.Pids
	want := container.Resources{Memory: mem, MemorySwap: mem, PidsLimit: &pids, NanoCPUs: nanoCPUs(prof.CPUs)}
	changed := have.Memory != mem || have.MemorySwap != mem || have.PidsLimit == nil || *have.PidsLimit != pids
	switch {
	case want.NanoCPUs > 0:
		changed = changed || have.NanoCPUs != want.NanoCPUs
	case have.NanoCPUs > 0:
		ncpu, err := engineCPUs(ctx, p.cli)
		if err != nil {
			return want, false, err
		}
		if all := int64(ncpu) * 1e9; have.NanoCPUs < all {
			want.NanoCPUs, changed = all, true
		}
	}
	return want, changed, nil
}
