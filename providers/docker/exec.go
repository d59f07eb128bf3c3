package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// The Engine has no API to kill an exec, so every command runs under this
// wrapper. It starts the command through setsid, which makes it the leader
// of a new process group, records that group in a file under /tmp and waits
// for it. When the command's main process ends the wrapper kills whatever
// is left in its group, so a background child never outlives its call and
// never holds the output stream open. To stop a command early, killScript
// reads the file and kills the group (see runExec).
//
// The file is /tmp/.brain-exec-<tag>; the tag is the execute's sequence,
// so a restarted provider can still cancel a command it started.
const wrapperScript = `f=$1; shift
exec 3<&0
setsid "$@" <&3 3<&- &
c=$!
exec 3<&-
echo "$c" >"$f"
wait "$c"; r=$?
kill -KILL -"$c" 2>/dev/null
rm -f "$f"
exit "$r"`

// killScript exits 3 when the group file does not exist (the wrapper has
// not started the command yet, or it already finished).
const killScript = `f=$1
[ -s "$f" ] || exit 3
read -r g <"$f" && kill -KILL -"$g" 2>/dev/null
exit 0`

func groupFile(tag string) string { return tmpDir + "/.brain-exec-" + tag }

// execSpec is one command to run in a binding's container.
type execSpec struct {
	Argv []string
	Env  []string // added to baseEnv
	Dir  string   // absolute, inside the container
	User string
	// Stdin is sent to the command and then closed; nil sends nothing.
	Stdin io.Reader
	// Tag names the process-group file; unique among running commands.
	Tag string
}

// stopError reports a command stopped because its context ended. Cleanup
// is set when the process group could not be confirmed dead.
type stopError struct {
	Cause   error
	Cleanup error
}

func (e *stopError) Error() string {
	if e.Cleanup != nil {
		return fmt.Sprintf("command stopped (%v); cleanup: %v", e.Cause, e.Cleanup)
	}
	return fmt.Sprintf("command stopped (%v)", e.Cause)
}

func (e *stopError) Unwrap() error { return e.Cause }

// killBudget bounds how long stopping a command may take; it stays below
// the SDK's default stop grace.
const killBudget = 4 * time.Second

// runExec runs s in the container ctr, demultiplexing its output into
// stdout and stderr, and returns its exit code. When ctx ends first it
// kills the command's process group, waits until the output stream closes
// (every process holding it is gone) and returns a *stopError.
func runExec(ctx context.Context, cli *client.Client, ctr string, s execSpec, stdout, stderr io.Writer) (int, error) {
	cmd := append([]string{"/bin/sh", "-c", wrapperScript, "brain-exec", groupFile(s.Tag)}, s.Argv...)
	created, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{
		User:         s.User,
		Cmd:          cmd,
		Env:          append(append([]string(nil), baseEnv...), s.Env...),
		WorkingDir:   s.Dir,
		AttachStdin:  s.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return 0, execError(ctx, ctr, err)
	}
	att, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, execError(ctx, ctr, err)
	}
	defer att.Close()

	if s.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, s.Stdin)
			_ = att.CloseWrite()
		}()
	}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		done <- err
	}()

	select {
	case err := <-done:
		if err != nil {
			return 0, fmt.Errorf("read command output: %w", err)
		}
		return exitCode(ctx, cli, created.ID)
	case <-ctx.Done():
	}
	stop := &stopError{Cause: ctx.Err()}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBudget)
	defer cancel()
	stop.Cleanup = killUntilClosed(kctx, cli, ctr, s.User, s.Tag, done)
	if stop.Cleanup != nil {
		att.Close() // unblock the reader; the command may still run
		<-done
	}
	return 0, stop
}

// killUntilClosed kills the command's process group until its output
// stream closes, which happens once no process holds it any longer.
func killUntilClosed(ctx context.Context, cli *client.Client, ctr, user, tag string, done <-chan error) error {
	wait := 20 * time.Millisecond
	var lastErr error
	for {
		if err := killGroup(ctx, cli, ctr, user, tag); err != nil {
			lastErr = err
		}
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return nil
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if lastErr == nil {
				lastErr = errors.New("the process group did not exit")
			}
			return fmt.Errorf("kill process group of %s: %w", tag, lastErr)
		}
		if wait < 320*time.Millisecond {
			wait *= 2
		}
	}
}

// killGroup runs killScript once in the container and waits for it.
func killGroup(ctx context.Context, cli *client.Client, ctr, user, tag string) error {
	created, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{
		User:         user,
		Cmd:          []string{"/bin/sh", "-c", killScript, "brain-kill", groupFile(tag)},
		Env:          baseEnv,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return fmt.Errorf("create kill exec: %w", err)
	}
	att, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("start kill exec: %w", err)
	}
	defer att.Close()
	go func() {
		<-ctx.Done()
		att.Close()
	}()
	if _, err := io.Copy(io.Discard, att.Reader); err != nil && ctx.Err() != nil {
		return fmt.Errorf("kill exec: %w", ctx.Err())
	}
	return nil
}

// exitCode reads the exit code of a finished exec. The stream can close a
// moment before the Engine records the exit, so a running exec is asked
// again a few times.
func exitCode(ctx context.Context, cli *client.Client, id string) (int, error) {
	wait := time.Millisecond
	for i := 0; ; i++ {
		info, err := cli.ContainerExecInspect(context.WithoutCancel(ctx), id)
		if err != nil {
			return 0, fmt.Errorf("inspect exec: %w", err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		if i == 12 {
			return 0, fmt.Errorf("exec %s still reported running after its output closed", id)
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// execError classifies a failure to create or start an exec.
func execError(ctx context.Context, ctr string, err error) error {
	switch {
	case ctx.Err() != nil:
		return &stopError{Cause: ctx.Err()}
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: container %s: %v", errLost, ctr, err)
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("%w: container %s: %w", errNotRunning, ctr, err)
	}
	return fmt.Errorf("exec in %s: %w", ctr, err)
}

// errNotRunning reports an exec refused because the container is stopped.
var errNotRunning = errors.New("container not running")
