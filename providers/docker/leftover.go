package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
)

// leftoverScript kills every command an earlier provider process started
// in the container: the process group recorded in each group file, every
// process carrying a tag (any tag: t is the pattern killall_ matches
// BRAIN_EXEC_TAG= against), and every orphan without a tag that started
// at or after the oldest wrapper found running (by the start its file
// recorded: a file left by a command stopped earlier may name a pid that
// another process holds now), or the oldest tagged process, when that is
// older (a wrapper may have had no room to write its file). That start
// time is kept in leftoverFile and printed on stderr, and an earlier
// run's is given as $1, since a run kills the wrappers it was read from
// and an orphan may be adopted by the init only after the run. It prints the pids it found on stdout; a run that finds
// nothing removes the group files and leftoverFile. The container's init,
// its keep-alive and execs the provider did not start (they carry no tag
// and are not orphans) are left alone.
const leftoverScript = `t='.*'
` + procFuncs + `
m=` + leftoverFile + `
oldest= found=
[ -s "$m" ] && read -r oldest <"$m"
[ -n "$1" ] && { [ -z "$oldest" ] || [ "$1" -lt "$oldest" ]; } && oldest=$1
for f in ` + tmpDir + `/.brain-exec-*; do
g= w= ws= cs=
[ -s "$f" ] && read -r g w ws cs <"$f" || continue
same "$w" "$ws" && { [ -z "$oldest" ] || [ "$ws" -lt "$oldest" ]; } && oldest=$ws
groupkill && { echo "$g"; found=1; }
done
[ -n "$oldest" ] && echo "$oldest" 2>/dev/null >"$m"
k=$(killall_ "$oldest"; echo ":$s")
s=${k##*:}; k=${k%:*}
[ -n "$s" ] && [ "$s" != "$oldest" ] && oldest=$s && echo "$oldest" 2>/dev/null >"$m"
[ -n "$k" ] && { echo "$k"; found=1; }
echo "since=$oldest" >&2
[ -n "$found" ] || rm -f ` + tmpDir + `/.brain-exec-* "$m"
exit 0`

// leftoverFile keeps, between runs of leftoverScript, the start time of
// the oldest command it found.
const leftoverFile = tmpDir + "/.brain-leftovers"

// KillLeftovers kills, in the running container of every binding of this
// state directory, what is left of the commands of a provider process
// that ended without stopping them (killed with SIGKILL, or crashed):
// nothing enforces their deadlines any more. Call it once before serving,
// when no command of this provider runs yet and no other provider serves
// the directory (Command does); the gc command never does, since the
// provider serving the directory may be alive. A binding whose container
// is stopped or gone is skipped (nothing of a command runs there), and so
// is one whose container is paused, which nothing can exec in: its
// commands are killed when the provider resumes it (settleLeftovers). It
// answers the bindings whose leftovers could not be confirmed dead.
func (p *Provider) KillLeftovers(ctx context.Context) error {
	p.mu.Lock()
	bs := make([]*binding, 0, len(p.bindings))
	for _, b := range p.bindings {
		bs = append(bs, b)
	}
	p.mu.Unlock()
	var errs []error
	for _, b := range bs {
		st := b.state()
		if st.Phase != phaseReady {
			continue
		}
		if err := b.leftoverLock.lock(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
		killed, paused, err := p.killContainerLeftovers(ctx, st.resourceName(), containerUser)
		b.leftovers = paused
		b.leftoverLock.unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("binding %s: %w", b.key, err))
			continue
		}
		if paused {
			p.log.Info("the container is paused: the commands of an earlier provider process left in it are killed when it is resumed", "binding", b.key)
		}
		if killed != "" {
			p.log.Info("killed the commands of an earlier provider process", "binding", b.key, "pids", killed)
		}
	}
	return errors.Join(errs...)
}

// containerUser is the user a kill of what an earlier provider process
// started runs as: the one the container was made with (an exec that
// names no user runs as the container's). Every command of the container
// ran as that user, since a profile whose user differs from its
// container's runs nothing there (settleProfile); the user the profile
// names now, which may be another one after a restart, or none, when the
// profile was withdrawn, could not signal them.
const containerUser = ""

// settleLeftovers kills, before anything of this provider runs in the
// binding's container, the commands an earlier provider process left in
// it when KillLeftovers found it paused: it resumes the container, as
// every use of it does (see ensureRunning), and kills them. Those it
// could not confirm dead are logged, as at start; a kill cut short by
// ctx is not taken for done, and the next use kills them again. A
// container gone wraps errLost.
func (p *Provider) settleLeftovers(ctx context.Context, b *binding, a *allocation) error {
	if err := b.leftoverLock.lock(ctx); err != nil {
		return err
	}
	defer b.leftoverLock.unlock()
	if !b.leftovers {
		return nil
	}
	if err := ensureRunning(ctx, p.cli, a); err != nil {
		return err
	}
	killed, paused, err := p.killContainerLeftovers(ctx, a.Container, containerUser)
	if paused {
		return fmt.Errorf("container %s was paused again before the commands of an earlier provider process in it could be killed", a.Container)
	}
	if err != nil && ctx.Err() != nil {
		// Cut short by the caller's deadline or cancel, maybe before any
		// kill reached the container: the next use kills them.
		return fmt.Errorf("the commands of an earlier provider process in container %s were still being killed: %w", a.Container, err)
	}
	b.leftovers = false
	if err != nil {
		p.log.Error("the commands of an earlier provider process could not be confirmed dead", "binding", b.key, "error", err)
	}
	if killed != "" {
		p.log.Info("killed the commands of an earlier provider process", "binding", b.key, "pids", killed)
	}
	return nil
}

// killContainerLeftovers runs leftoverScript in ctr until a run finds
// nothing left, within killBudget; it answers the pids it killed, and
// whether it found the container paused (then it did nothing).
func (p *Provider) killContainerLeftovers(ctx context.Context, ctr, user string) (string, bool, error) {
	info, err := p.cli.ContainerInspect(ctx, ctr)
	switch {
	case cerrdefs.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("inspect container: %w", err)
	case info.State != nil && info.State.Paused:
		return "", true, nil
	case info.State == nil || !info.State.Running:
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, killBudget)
	defer cancel()
	var killed []string
	var oldest string
	wait := 20 * time.Millisecond
	for {
		left, errOut, err := runKillExec(ctx, p.cli, ctr, user, "/bin/sh", "-c", leftoverScript, "brain-leftovers", oldest)
		if bound := startBound(errOut); bound != "" {
			oldest = bound
		}
		if err != nil {
			return strings.Join(killed, ", "), false, err
		}
		if left == "" {
			return strings.Join(killed, ", "), false, nil
		}
		killed = append(killed, left)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return strings.Join(killed, ", "), false, fmt.Errorf("processes %s of an earlier provider process were still running: %w", left, ctx.Err())
		}
		if wait < 320*time.Millisecond {
			wait *= 2
		}
	}
}
