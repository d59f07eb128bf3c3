package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Paths inside every container.
const (
	workspaceDir = "/workspace"
	tmpDir       = "/tmp"
	// keepAlive is the container's main command under the Engine's init:
	// it only keeps the container alive for execs.
	keepAliveSeconds = "2147483647"
)

// baseEnv is the environment every command starts from.
var baseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=" + tmpDir,
}

// hardenedConfig is the container of one binding: non-root, read-only root
// filesystem, every capability dropped, no-new-privileges, memory and pids
// limits, a tmpfs /tmp, no network unless the profile names one, the
// Engine's init as PID 1 (it reaps the orphans of killed process groups).
func hardenedConfig(p Profile, imageID, volumeName string, labels map[string]string) (*container.Config, *container.HostConfig) {
	mem := p.MemoryMB << 20
	pids := p.Pids
	init := true
	cfg := &container.Config{
		Image:           imageID,
		User:            p.User,
		Entrypoint:      []string{"sleep"},
		Cmd:             []string{keepAliveSeconds},
		WorkingDir:      workspaceDir,
		Env:             baseEnv,
		Labels:          labels,
		NetworkDisabled: p.Network == DefaultNetwork,
		AttachStdout:    false,
		AttachStderr:    false,
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(p.Network),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &init,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem,
			PidsLimit:  &pids,
			NanoCPUs:   int64(p.CPUs * 1e9),
		},
		Tmpfs: map[string]string{tmpDir: tmpfsOptions(p)},
		Mounts: []mount.Mount{{
			Type:     mount.TypeVolume,
			Source:   volumeName,
			Target:   workspaceDir,
			ReadOnly: p.Workspace == WorkspaceRead,
		}},
	}
	return cfg, hc
}

// tmpfsOptions are the options of the container's /tmp. It belongs to
// the profile's user: an Engine that starts a stopped container again
// (after a detach or its own restart) may mount it with mode 0755 instead
// of 1777 when the image has no /tmp, and /tmp must stay writable for the
// commands (it is their HOME) and the wrapper's process-group file.
func tmpfsOptions(p Profile) string {
	opts := "rw,nosuid,nodev,mode=1777,size=" + strconv.FormatInt(p.TmpfsMB, 10) + "m"
	if uid, gid, err := splitUser(p.User); err == nil {
		opts += ",uid=" + strconv.Itoa(uid) + ",gid=" + strconv.Itoa(gid)
	}
	return opts
}

func splitUser(user string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		return 0, 0, fmt.Errorf("user %q is not uid:gid", user)
	}
	if uid, err = strconv.Atoi(u); err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", user, err)
	}
	if gid, err = strconv.Atoi(g); err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", user, err)
	}
	return uid, gid, nil
}

// errLost reports a container or volume that vanished out of band.
var errLost = errors.New("resource lost")

// ensureRunning checks that the binding's container and volume exist and
// starts the container if it is stopped (after a detach, an Engine restart
// or a crash of its keep-alive), or resumes it if it was paused. A missing
// container or volume wraps errLost: it is never re-created.
func ensureRunning(ctx context.Context, cli *client.Client, a *allocation) error {
	info, err := cli.ContainerInspect(ctx, a.Container)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: container %s no longer exists", errLost, a.Container)
	}
	if err != nil {
		return fmt.Errorf("inspect container %s: %w", a.Container, err)
	}
	if info.State != nil && info.State.Paused {
		err := cli.ContainerUnpause(ctx, a.Container)
		switch {
		case cerrdefs.IsNotFound(err):
			return fmt.Errorf("%w: container %s: %v", errLost, a.Container, err)
		case err != nil && !cerrdefs.IsConflict(err): // conflict: no longer paused
			return fmt.Errorf("unpause container %s: %w", a.Container, err)
		}
		return nil
	}
	if info.State != nil && info.State.Running {
		return nil
	}
	if _, err := cli.VolumeInspect(ctx, a.Volume); cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: volume %s no longer exists", errLost, a.Volume)
	}
	if err := cli.ContainerStart(ctx, a.Container, container.StartOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: container %s: %v", errLost, a.Container, err)
		}
		return fmt.Errorf("start container %s: %w", a.Container, err)
	}
	return nil
}

// resumePaused resumes the container ctr if it is paused, and answers
// whether it was.
func resumePaused(ctx context.Context, cli *client.Client, ctr string) (bool, error) {
	info, err := cli.ContainerInspect(ctx, ctr)
	switch {
	case cerrdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("inspect container %s: %w", ctr, err)
	case info.State == nil || !info.State.Paused:
		return false, nil
	}
	if err := cli.ContainerUnpause(ctx, ctr); err != nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsNotFound(err) {
		return false, fmt.Errorf("unpause container %s: %w", ctr, err)
	}
	return true, nil
}

// removeBinding force-removes every container and then every volume that
// carries the binding's labels. Missing resources are not errors.
func removeBinding(ctx context.Context, cli *client.Client, instance, key string) error {
	f := bindingFilter(instance, key)
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if err := removeContainer(ctx, cli, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list volumes: %w", err))...)
	}
	for _, v := range vs.Volumes {
		if err := removeVolume(ctx, cli, v.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeContainer force-removes a container with its anonymous volumes
// (those an image's VOLUME gives every container made from it, which
// carry no labels and would be left behind for good); the volumes mounted
// by name, the binding's own, are never removed with it.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

func removeVolume(ctx context.Context, cli *client.Client, name string) error {
	err := cli.VolumeRemove(ctx, name, true)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}

// stopContainer stops the binding's container; its volume stays.
func stopContainer(ctx context.Context, cli *client.Client, name string) error {
	timeout := 2
	err := cli.ContainerStop(ctx, name, container.StopOptions{Timeout: &timeout})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stop container %s: %w", name, err)
	}
	return nil
}
