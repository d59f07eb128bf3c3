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
// at or after the oldest wrapper found running. That start time is kept
// in leftoverFile, since a run kills the wrappers it was read from and an
// orphan may be adopted by the init only after the run. It prints the
// pids it found; a run that finds nothing removes the group files and
// leftoverFile. The container's init, its keep-alive and execs the
// provider did not start (they carry no tag and are not orphans) are left
// alone.
const leftoverScript = `t='.*'
` + procFuncs + `
m=` + leftoverFile + `
oldest= found=
[ -s "$m" ] && read -r oldest <"$m"
for f in ` + tmpDir + `/.brain-exec-*; do
g= w=
[ -s "$f" ] && read -r g w <"$f" || continue
since=
[ -n "$w" ] && started "$w" 2>/dev/null && { [ -z "$oldest" ] || [ "$since" -lt "$oldest" ]; } && oldest=$since
[ -n "$g" ] && kill -KILL -"$g" 2>/dev/null && { echo "$g"; found=1; }
done
[ -n "$oldest" ] && echo "$oldest" >"$m"
k=$(killall_ "$oldest")
[ -n "$k" ] && { echo "$k"; found=1; }
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
// is stopped, paused or gone is skipped. It answers the bindings whose
// leftovers could not be confirmed dead.
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
		user := b.profile.User
		if b.withdrawn {
			user = "" // the container's own user
		}
		killed, err := p.killContainerLeftovers(ctx, st.resourceName(), user)
		if err != nil {
			errs = append(errs, fmt.Errorf("binding %s: %w", b.key, err))
			continue
		}
		if killed != "" {
			p.log.Info("killed the commands of an earlier provider process", "binding", b.key, "pids", killed)
		}
	}
	return errors.Join(errs...)
}

// killContainerLeftovers runs leftoverScript in ctr until a run finds
// nothing left, within killBudget; it answers the pids it killed.
func (p *Provider) killContainerLeftovers(ctx context.Context, ctr, user string) (string, error) {
	info, err := p.cli.ContainerInspect(ctx, ctr)
	switch {
	case cerrdefs.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("inspect container: %w", err)
	case info.State == nil || !info.State.Running || info.State.Paused:
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, killBudget)
	defer cancel()
	var killed []string
	wait := 20 * time.Millisecond
	for {
		left, err := runKillExec(ctx, p.cli, ctr, user, "/bin/sh", "-c", leftoverScript, "brain-leftovers")
		if err != nil {
			return strings.Join(killed, ", "), err
		}
		if left == "" {
			return strings.Join(killed, ", "), nil
		}
		killed = append(killed, left)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return strings.Join(killed, ", "), fmt.Errorf("processes %s of an earlier provider process were still running: %w", left, ctx.Err())
		}
		if wait < 320*time.Millisecond {
			wait *= 2
		}
	}
}
