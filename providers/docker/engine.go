package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// newClient connects to the Engine named by the DOCKER_* environment
// (the local socket by default), negotiating the API version so that
// older Engines (API 1.41) work.
func newClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	return cli, nil
}

// errImageMissing reports an image reference the Engine does not have.
type errImageMissing struct{ ref string }

func (e *errImageMissing) Error() string {
	return fmt.Sprintf("image %q is not present on the Engine (the provider never pulls)", e.ref)
}

// resolveImage returns the immutable ID of a local image reference.
func resolveImage(ctx context.Context, cli *client.Client, ref string) (string, error) {
	info, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", &errImageMissing{ref: ref}
	}
	if err != nil {
		return "", fmt.Errorf("inspect image %q: %w", ref, err)
	}
	return info.ID, nil
}
