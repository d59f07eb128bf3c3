package docker

import (
	"context"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// helperTimeout bounds the create and the removal of a one-shot helper
// container (the setup's probe, the chown), which run whatever becomes of
// the caller's context.
const helperTimeout = 30 * time.Second

// createHelper creates the one-shot helper container name, which its
// caller removes once it is done with it. The create runs apart from ctx,
// bounded by helperTimeout: a create the client gave up on may still be
// carried out by the Engine, leaving a container that its caller, having
// returned, never removes. A container of that name already there was
// left by a provider killed while it used it: it is removed and the
// create made again (the helpers are repeatable).
func createHelper(ctx context.Context, cli *client.Client, cfg *container.Config, hc *container.HostConfig, name string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helperTimeout)
	defer cancel()
	_, err := cli.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	if cerrdefs.IsConflict(err) {
		if err := removeContainer(cctx, cli, name); err != nil {
			return err
		}
		_, err = cli.ContainerCreate(cctx, cfg, hc, nil, nil, name)
	}
	return err
}
