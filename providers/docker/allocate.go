package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// allocation is what a binding's lazy allocation produced: the names of
// its container and volume.
type allocation struct {
	Container string
	Volume    string
}

// plan is everything createResources needs.
type plan struct {
	Profile Profile
	ImageID string
	Name    string // of the container and the volume
	Labels  map[string]string
	// Chown: the image's /workspace is not owned by the profile's user, so
	// the volume root must be given to it (see chownVolume).
	Chown bool
	// Step reports a step starting; the answered func reports its end.
	Step func(step string) func(error)
}

// createResources creates the binding's volume and container and starts
// the container. On its first start the Engine copies the image's
// /workspace (content and ownership) into the empty volume; when that does
// not leave the volume owned by the profile's user, a one-shot container
// chowns it. Nothing is retried: the caller records the outcome.
func createResources(ctx context.Context, cli *client.Client, pl plan) (*allocation, error) {
	step := pl.Step
	if step == nil {
		step = func(string) func(error) { return func(error) {} }
	}
	do := func(name string, f func() error) error {
		done := step(name)
		err := f()
		done(err)
		return err
	}
	if err := do("create volume", func() error {
		if _, err := cli.VolumeCreate(ctx, volume.CreateOptions{Name: pl.Name, Labels: pl.Labels}); err != nil {
			return fmt.Errorf("create volume %s: %w", pl.Name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	cfg, hc := hardenedConfig(pl.Profile, pl.ImageID, pl.Name, pl.Labels)
	if err := do("create container", func() error {
		_, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, pl.Name)
		if cerrdefs.IsNotFound(err) && imageGone(ctx, cli, pl.ImageID) {
			return fmt.Errorf("create container %s: the binding's image %s is no longer on the Engine (the provider never pulls; tear the binding down and set it up again): %w", pl.Name, pl.ImageID, err)
		}
		if err != nil {
			return fmt.Errorf("create container %s: %w", pl.Name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := do("start container", func() error {
		if err := cli.ContainerStart(ctx, pl.Name, container.StartOptions{}); err != nil {
			return fmt.Errorf("start container %s: %w", pl.Name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if pl.Chown && pl.Profile.Workspace == WorkspaceWrite {
		if err := do("chown workspace", func() error { return chownVolume(ctx, cli, pl) }); err != nil {
			return nil, err
		}
	}
	return &allocation{Container: pl.Name, Volume: pl.Name}, nil
}

// imageGone reports whether the Engine says it has no image id (the
// Engine answers not found for a missing network too).
func imageGone(ctx context.Context, cli *client.Client, id string) bool {
	_, err := cli.ImageInspect(ctx, id)
	return cerrdefs.IsNotFound(err)
}

// chownVolume runs a one-shot container that gives the volume root to the
// profile's user: root with CAP_CHOWN only, no network, read-only root
// filesystem, no-new-privileges. It is removed whatever happens.
func chownVolume(ctx context.Context, cli *client.Client, pl plan) (err error) {
	name := pl.Name + "-chown"
	pids := int64(8)
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"CHOWN"},
		SecurityOpt:    []string{"no-new-privileges"},
		LogConfig:      container.LogConfig{Type: "none"},
		Resources:      container.Resources{Memory: 16 << 20, MemorySwap: 16 << 20, PidsLimit: &pids},
		Mounts: []mount.Mount{{
			Type: mount.TypeVolume, Source: pl.Name, Target: workspaceDir,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		}},
	}
	cfg := &container.Config{
		Image:           pl.ImageID,
		User:            "0:0",
		Entrypoint:      []string{"chown"},
		Cmd:             []string{pl.Profile.User, workspaceDir},
		Env:             baseEnv,
		Labels:          pl.Labels,
		NetworkDisabled: true,
	}
	if _, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name); err != nil {
		return fmt.Errorf("create chown container: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := removeContainer(rctx, cli, name); rerr != nil && err == nil {
			err = rerr
		}
	}()
	waitC, errC := cli.ContainerWait(ctx, name, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
		return fmt.Errorf("start chown container: %w", err)
	}
	select {
	case res := <-waitC:
		if res.StatusCode != 0 {
			return fmt.Errorf("chown container exited %d", res.StatusCode)
		}
		return nil
	case err := <-errC:
		return fmt.Errorf("wait for chown container: %w", err)
	}
}

// workspaceOwner reports who owns /workspace in an image, by creating (not
// starting) a container and reading the directory's archive header. exists
// is false when the image has no /workspace.
func workspaceOwner(ctx context.Context, cli *client.Client, imageID, name string, labels map[string]string) (uid, gid int, exists bool, err error) {
	cfg := &container.Config{
		Image: imageID, Entrypoint: []string{"sleep"}, Cmd: []string{keepAliveSeconds},
		Labels: labels, NetworkDisabled: true,
	}
	hc := &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, LogConfig: container.LogConfig{Type: "none"}}
	_, err = cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if cerrdefs.IsConflict(err) {
		// Left by a provider killed while it probed: it never runs.
		if err := removeContainer(ctx, cli, name); err != nil {
			return 0, 0, false, err
		}
		_, err = cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("create probe container: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := removeContainer(rctx, cli, name); rerr != nil && err == nil {
			err = rerr
		}
	}()
	rc, _, err := cli.CopyFromContainer(ctx, name, workspaceDir)
	if cerrdefs.IsNotFound(err) {
		// The Engine answers the same for a probe container removed
		// meanwhile, which says nothing of the image.
		if _, ierr := cli.ContainerInspect(ctx, name); ierr != nil {
			return 0, 0, false, fmt.Errorf("read %s of the image: the probe container is gone: %w", workspaceDir, ierr)
		}
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read %s of the image: %w", workspaceDir, err)
	}
	defer rc.Close()
	hdr, err := tar.NewReader(rc).Next()
	if err != nil {
		return 0, 0, false, fmt.Errorf("read %s of the image: %w", workspaceDir, err)
	}
	if hdr.Typeflag != tar.TypeDir {
		return 0, 0, false, fmt.Errorf("%s of the image is not a directory", workspaceDir)
	}
	return hdr.Uid, hdr.Gid, true, nil
}
