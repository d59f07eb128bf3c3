package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"strconv"

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
	// Chown: the image's /workspace, or something in it, is not owned by
	// the profile's user, so the volume's content must be given to it (see
	// chownVolume).
	Chown bool
	// Step reports a step starting; the answered func reports its end.
	Step func(step string) func(error)
}

// createResources creates the binding's volume and container and starts
// the container. On its first start the Engine copies the image's
// /workspace (content and ownership) into the empty volume; when that does
// not leave the volume and everything in it owned by the profile's user, a
// one-shot container chowns them. Nothing is retried: the caller records the outcome.
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

// chownScript gives /workspace and everything in it to uid $1 and gid $2,
// a symbolic link itself rather than what it points to. It changes only
// the entries that do not already belong to them (find), so that one
// stopped part-way and run again goes on from where it was, never
// starting over: a workspace too large for one run is given whole by a
// few. An image whose find cannot select by owner (the first find, of
// /workspace alone, fails before anything is changed) falls back to
// chown -R, which changes everything each time.
const chownScript = `u=$1 g=$2
if find /workspace -prune \( ! -user "$u" -o ! -group "$g" \) -exec chown -h "$u:$g" {} +; then
	exec find /workspace \( ! -user "$u" -o ! -group "$g" \) -exec chown -h "$u:$g" {} +
fi
exec chown -R -h "$u:$g" /workspace`

// chownVolume runs a one-shot container that gives the volume and
// everything in it (the files the image's /workspace put there) to the
// profile's user, a symbolic link itself rather than what it points to
// (chownScript): root with CAP_CHOWN only, no network, read-only root
// filesystem, no-new-privileges. It is removed whatever happens.
func chownVolume(ctx context.Context, cli *client.Client, pl plan) (err error) {
	uid, gid, err := splitUser(pl.Profile.User)
	if err != nil {
		return fmt.Errorf("chown container: %w", err)
	}
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
		Entrypoint:      []string{"/bin/sh", "-c", chownScript, "chown"},
		Cmd:             []string{strconv.Itoa(uid), strconv.Itoa(gid)},
		Env:             baseEnv,
		Labels:          pl.Labels,
		NetworkDisabled: true,
	}
	// Created whatever becomes of ctx meanwhile (createHelper): one left
	// behind would hold the volume (a teardown could not remove it) and
	// the name (the next chown could not be made).
	if err := createHelper(ctx, cli, cfg, hc, name); err != nil {
		return fmt.Errorf("create chown container: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helperTimeout)
		defer cancel()
		if rerr := removeContainer(rctx, cli, name); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chown container: %w", err)
	}
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

// maxProbeBytes bounds what workspaceOwned reads of the archive of an
// image's /workspace: an image with more there is chowned without looking
// further (which costs a container start, and changes nothing of what
// already belongs to the user).
const maxProbeBytes = 64 << 20

// workspaceOwned reports whether /workspace in an image and everything in
// it belong to uid:gid, by creating (not starting) a container and reading
// the headers of the directory's archive. It is false when the image has
// no /workspace, and when the archive is larger than maxProbeBytes.
func workspaceOwned(ctx context.Context, cli *client.Client, imageID, name string, labels map[string]string, uid, gid int) (owned bool, err error) {
	cfg := &container.Config{
		Image: imageID, Entrypoint: []string{"sleep"}, Cmd: []string{keepAliveSeconds},
		Labels: labels, NetworkDisabled: true,
	}
	hc := &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, LogConfig: container.LogConfig{Type: "none"}}
	// Created whatever becomes of ctx meanwhile (createHelper): one left
	// behind by a setup whose caller gave up would belong to no binding
	// Brain knows of.
	if err := createHelper(ctx, cli, cfg, hc, name); err != nil {
		return false, fmt.Errorf("create probe container: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helperTimeout)
		defer cancel()
		if rerr := removeContainer(rctx, cli, name); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("probe container: %w", err)
	}
	rc, _, err := cli.CopyFromContainer(ctx, name, workspaceDir)
	if cerrdefs.IsNotFound(err) {
		// The Engine answers the same for a probe container removed
		// meanwhile, which says nothing of the image.
		if _, ierr := cli.ContainerInspect(ctx, name); ierr != nil {
			return false, fmt.Errorf("read %s of the image: the probe container is gone: %w", workspaceDir, ierr)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s of the image: %w", workspaceDir, err)
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: rc, N: maxProbeBytes}
	tr := tar.NewReader(lr)
	for first := true; ; first = false {
		hdr, err := tr.Next()
		switch {
		case err != nil && lr.N == 0:
			// Cut at maxProbeBytes: what is beyond is not known.
			return false, nil
		case err == io.EOF && !first:
			return true, nil
		case err == io.EOF:
			return false, fmt.Errorf("read %s of the image: %w", workspaceDir, io.ErrUnexpectedEOF)
		case err != nil:
			return false, fmt.Errorf("read %s of the image: %w", workspaceDir, err)
		}
		if first && hdr.Typeflag != tar.TypeDir {
			return false, fmt.Errorf("%s of the image is not a directory", workspaceDir)
		}
		if hdr.Uid != uid || hdr.Gid != gid {
			return false, nil
		}
	}
}
