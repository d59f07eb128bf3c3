package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// removedOutcome answers errLost when the container ctr is gone or being
// removed (docker rm -f kills what runs in it before it removes it), and
// nil when the Engine says otherwise or cannot say. It is asked after a
// command ended without a clean exit: a command killed by its container's
// removal ran in an environment that no longer exists, which its exit
// status alone would pass off as the command's own end.
func removedOutcome(ctx context.Context, cli *client.Client, ctr string) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBudget)
	defer cancel()
	info, err := cli.ContainerInspect(ictx, ctr)
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: container %s was removed while the command ran: %v", errLost, ctr, err)
	case err != nil || info.State == nil:
		return nil
	case info.State.Status == container.StateRemoving || info.State.Status == container.StateDead:
		return fmt.Errorf("%w: container %s was removed while the command ran (%s)", errLost, ctr, info.State.Status)
	}
	return nil
}

// signalledOutcome answers a command whose exit status (code, 128 or
// more) says a signal ended it, or ended its wrapper before the wrapper's
// own cleanup: what is left of it is killed, so that it does not outlive
// its call, and a container removed meanwhile is errLost rather than the
// command's exit status. The container is asked again after the kill: the
// Engine may report it running for a moment after the removal's kill
// ended the command.
func signalledOutcome(ctx context.Context, cli *client.Client, ctr string, s execSpec, code int) (int, error) {
	if err := removedOutcome(ctx, cli, ctr); err != nil {
		return 0, err
	}
	_, _ = killAll(ctx, cli, ctr, s)
	if err := removedOutcome(ctx, cli, ctr); err != nil {
		return 0, err
	}
	return code, nil
}
