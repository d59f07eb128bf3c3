package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/brain-in-go/brain/envsdk"
)

// The Engine has no API to kill an exec, so every command runs under this
// wrapper. It starts the command through setsid, which makes it the leader
// of a new process group, records in a file under /tmp that group, its
// own pid, its own start time and that of the group's leader ("GROUP PID
// START LEADER_START", the last empty when it could not be read), and
// waits for it. The start times tell a wrapper or leader still running
// from a process that was given the same pid once it ended (see same).
// When the command's main process ends the wrapper kills whatever is left
// in its group, every other process that carries the command's tag in its
// environment (BRAIN_EXEC_TAG, which every process the command starts
// inherits: a child that made a session of its own with setsid too), and
// every orphan (a process whose parent ended, adopted by the container's
// init) that started after the wrapper and carries no tag (one that
// also cleared its environment) or only tags of no running command (one
// that gave itself a tag), so a background child never outlives its
// call. To stop a command early, killScript does the same from outside
// (see runExec), and so does runExec after an exit status of 128 or more,
// which is also what a wrapper the command killed before its cleanup ends
// with.
//
// Before it starts the command the wrapper writes startMark on stdout,
// which runExec takes off: a stream without it is the Engine's refusal to
// start the exec, never the command's output (see startGate).
//
// The file is /tmp/.brain-exec-<tag> (see groupFile); the tag is the
// execute's sequence, so a restarted provider can still cancel a command
// it started. The wrapper sets none of its own variables before the
// command starts: the command's environment holds the variables the
// execute gave, whatever their names, and nothing the wrapper keeps.
const wrapperScript = procFuncs + `
` + startMarkShell + `
exec 3<&0
setsid "$@" <&3 3<&- &
c=$!
t=$BRAIN_EXEC_TAG; f="` + tmpDir + `/.brain-exec-$t"; b=
exec 3<&-
since=; started $$; ws=$since
since=; started "$c" 2>/dev/null
echo "$c $$ $ws $since" >"$f"
wait "$c"; r=$?
kill -KILL -"$c" 2>/dev/null
killall_ "$ws" >/dev/null 2>&1
rm -f "$f"
exit "$r"`

// procFuncs are the shell functions of the wrapper and the kill; none
// forks but for the tag checks (and livetags, once for each exec).
// started sets since to a process's start time (clock ticks since boot,
// field 22 of /proc/<pid>/stat, read after the command name, which may
// hold spaces and parentheses). same $pid
// $start succeeds when process $pid started at $start: it is the process
// a group file recorded, not one the kernel gave the same pid after that
// one ended (pids wrap around), whose start says nothing of the command.
// older lowers s to the start time of process $1 when it started earlier
// (or s is empty). orphan $pid $since succeeds for a live process adopted
// by the init that started at or after $since. groupkill kills the
// process group g a group file recorded, unless g is not a process id
// (a file any command could have written) or the pid g belongs to
// another process than the group's leader, whose start the file recorded
// in cs: a pid stays taken while its group has members, so a group whose
// pid was given again has none left. killall_ kills, until a round finds
// none, every process but the running shell that carries tag $t, and
// every orphan that carries no tag a running command has (spared) and
// started at or after s: $1, or the start of the oldest process with tag $t it found, when that is earlier
// or $1 is empty (the wrapper, which starts before anything of its
// command, carries the tag: a kill that finds no group file, or no live
// wrapper, still knows where the command's orphans begin), or b once a
// process with tag $t is found (the start a group file recorded for a
// wrapper no longer running: while something of its command runs, that
// is where its orphans begin). It prints the pid of each process it found
// and leaves the bound it used in s. The init's own child (the container's
// keep-alive) is in the init's session (field 6, session 1), which no
// exec can join (the Engine starts each in a session of its own), so it
// is never taken for an orphan, though it may have started in the same
// clock tick as a command. An orphan of another command that carries its
// tag is left to that command while the command runs: livetags sets live
// to the tags (each "BRAIN_EXEC_TAG=..." line ending with a newline) of
// the processes the Engine started in the container (execs: their parent
// is outside it, pid 0 there), the wrappers of running commands among
// them, which no process of a command can be; spared $environ succeeds
// when the process carries one of them. A tag a process gave itself that
// no running command has spares nothing.
const procFuncs = `started() { read -r l <"/proc/$1/stat" || return 1; l=${l##*) }; set -- $l; since=${20}; }
same() { x=$2; [ -n "$x" ] && read -r l <"/proc/$1/stat" 2>/dev/null || return 1; l=${l##*) }; set -- $l; [ "${20}" = "$x" ]; }
groupkill() { case $g in ''|*[!0-9]*|0|1) return 1;; esac; [ -z "$cs" ] || [ ! -e "/proc/$g" ] || same "$g" "$cs" || return 1; kill -KILL -"$g" 2>/dev/null; }
older() { read -r l <"/proc/$1/stat" 2>/dev/null || return 0; l=${l##*) }; set -- $l; [ -n "$s" ] && [ "$s" -le "${20}" ] || s=${20}; }
orphan() { o=$2; read -r l <"/proc/$1/stat" 2>/dev/null || return 1; l=${l##*) }; set -- $l; [ "$1" != Z ] && [ "$2" = 1 ] && [ "$4" != 1 ] && [ "${20}" -ge "$o" ]; }
livetags() { live= nl='
'
for q in /proc/[0-9]*; do
[ "$q" = /proc/1 ] && continue
read -r l <"$q/stat" 2>/dev/null || continue; l=${l##*) }; set -- $l
[ "$2" = 0 ] || continue
live="$live$(tr '\0' '\n' <"$q/environ" 2>/dev/null | grep '^BRAIN_EXEC_TAG=')$nl"
done; }
spared() { tr '\0' '\n' <"$1" 2>/dev/null | grep '^BRAIN_EXEC_TAG=' | { while IFS= read -r x; do case "$nl$live" in *"$nl$x$nl"*) exit 0;; esac; done; exit 1; }; }
killall_() {
s=$1
for round in 1 2 3 4 5 6 7 8; do
found=
livetags
for e in /proc/[0-9]*/environ; do
p=${e#/proc/}; p=${p%/environ}
[ "$p" = "$$" ] || [ "$p" = 1 ] && continue
if tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "BRAIN_EXEC_TAG=$t"; then
older "$p"
[ -n "$b" ] && { [ -z "$s" ] || [ "$b" -lt "$s" ]; } && s=$b
kill -KILL "$p" 2>/dev/null && { echo "$p"; found=1; }
elif [ -n "$s" ] && orphan "$p" "$s" && [ -r "$e" ] && ! spared "$e"; then
kill -KILL "$p" 2>/dev/null && { echo "$p"; found=1; }
fi
done
[ -n "$found" ] || break
done
}`

// killScript kills the command's process group, when its file exists,
// and every process carrying its tag or orphaned without a tag since the
// command started: since $3, the bound an earlier run of the same kill
// found, or else the start the file recorded for the wrapper, while that
// wrapper runs or anything of its group or carrying the tag does (the
// command may have killed its wrapper), or else (no file yet,
// or none could be written) that of the oldest tagged process (see
// killall_). The start of whatever process holds the wrapper's pid now is
// never taken: the wrapper may have ended and its pid been given to
// another. It prints the pids of the processes it found on stdout (the
// group's id, when its kill reached one), so an empty output means none
// was left, and the bound it used on stderr (since=TICKS), which the next
// run is given: the wrapper, killed by this run, can no longer tell it.
// A run that finds nothing removes the file, which the wrapper it killed
// could not.
const killScript = `f=$1; t=$2; since=$3
` + procFuncs + `
g= w= ws= cs= b= any=
[ -s "$f" ] && read -r g w ws cs <"$f" && groupkill && { echo "$g"; any=1; }
if [ -z "$since" ] && [ -n "$ws" ]; then
if same "$w" "$ws" || [ -n "$any" ]; then since=$ws; else b=$ws; fi
fi
k=$(killall_ "$since"; echo ":$s")
s=${k##*:}; k=${k%:*}
echo "since=$s" >&2
[ -n "$k" ] && { echo "$k"; any=1; }
[ -n "$any" ] || rm -f "$f"
exit 0`

func groupFile(tag string) string { return tmpDir + "/.brain-exec-" + tag }

// tagEnv marks every process of the command tagged tag.
// execTagVar is the variable tagEnv sets.
const execTagVar = "BRAIN_EXEC_TAG"

func tagEnv(tag string) string { return execTagVar + "=" + tag }

// execSpec is one command to run in a binding's container.
type execSpec struct {
	Argv []string
	Env  []string // added to baseEnv
	Dir  string   // absolute, inside the container
	User string
	// Stdin is sent to the command and then closed; nil sends nothing.
	// It is bytes rather than a reader so that a command the Engine did
	// not start can be run again with the whole of it.
	Stdin []byte
	// Tag names the process-group file; unique among running commands.
	Tag string
	// OutputBytes is the budget the stdout and stderr writers share;
	// the command's stderr that arrives ahead of the start mark is held
	// within it (see startGate).
	OutputBytes int64
}

// stopError reports a command stopped because its context ended. Cleanup
// is set when the process group could not be confirmed dead. Before is
// set when the stop came before the command started, and says what the
// execute was waiting for then (the command never started).
type stopError struct {
	Cause   error
	Cleanup error
	Before  string
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
// stdout and stderr, and returns its exit code. An exec the Engine did not
// start, because the container stopped after the exec was created, is
// errNotRunning (nothing of the command ran) whether the Engine refused
// the start or said so on the exec's stream; a container gone, or
// removed while the command ran (see signalledOutcome), is errLost.
// When ctx ends first it
// kills the command's process group and tagged processes until none is
// left and the output stream has closed (killUntilClosed), and returns a
// *stopError; it does so too when ctx ends before the Engine answered the
// exec's start (see attach), which may have started the command.
func runExec(ctx context.Context, cli *client.Client, ctr string, s execSpec, stdout, stderr io.Writer) (int, error) {
	cmd := append([]string{"/bin/sh", "-c", wrapperScript, "brain-exec"}, s.Argv...)
	created, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{
		User:         s.User,
		Cmd:          cmd,
		Env:          append(append(append([]string(nil), baseEnv...), s.Env...), tagEnv(s.Tag)),
		WorkingDir:   s.Dir,
		AttachStdin:  s.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		err = execError(ctx, ctr, err)
		var stop *stopError
		if errors.As(err, &stop) {
			// Nothing starts an exec whose creation was cut short.
			stop.Before = "the Engine was creating the command's exec"
		}
		return 0, err
	}
	att, err := attach(ctx, cli, created.ID, func(late types.HijackedResponse) {
		// The Engine started the command after its stop was answered.
		late.Close()
		_, _ = killAll(ctx, cli, ctr, s)
	})
	if err != nil && (errors.Is(err, errAttachAbandoned) || ctx.Err() != nil) {
		// The start may have reached the Engine: what runs is killed.
		stop := &stopError{Cause: ctx.Err()}
		_, stop.Cleanup = killAll(ctx, cli, ctr, s)
		return 0, stop
	}
	if err != nil {
		err = execError(ctx, ctr, err)
		var stop *stopError
		if errors.As(err, &stop) || errors.Is(err, errLost) || errors.Is(err, errNotRunning) {
			return 0, err
		}
		if argsTooLarge(err.Error()) {
			// The kernel refused the command's arguments and environment:
			// nothing of it ran.
			return 0, errArgsTooLarge(err.Error())
		}
		if refused := startRefused(ctx, cli, ctr, created.ID); refused != nil {
			return 0, fmt.Errorf("%w (%v)", refused, err)
		}
		// The start may have reached the Engine: the command may run.
		return 0, lostOutcome(ctx, cli, ctr, s, err)
	}
	defer att.Close()

	if s.Stdin != nil {
		go func() {
			_, _ = att.Conn.Write(s.Stdin)
			_ = att.CloseWrite()
		}()
	}
	gate := newStartGate(stdout, stderr, s.OutputBytes)
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(gate.Stdout(), gate.Stderr(), att.Reader)
		done <- err
	}()

	select {
	case err := <-done:
		if err != nil {
			if lost := removedOutcome(ctx, cli, ctr); lost != nil {
				return 0, lost
			}
			return 0, lostOutcome(ctx, cli, ctr, s, fmt.Errorf("read command output: %w", err))
		}
		if !gate.Started() {
			return 0, notStarted(ctx, cli, ctr, gate.Refusal())
		}
		code, err := exitCode(ctx, cli, created.ID)
		if err != nil && !cerrdefs.IsNotFound(err) {
			if lost := removedOutcome(ctx, cli, ctr); lost != nil {
				return 0, lost
			}
			return 0, lostOutcome(ctx, cli, ctr, s, err)
		}
		if err == nil && code >= 128 {
			return signalledOutcome(ctx, cli, ctr, s, code)
		}
		return code, err
	case <-ctx.Done():
	}
	stop := &stopError{Cause: ctx.Err()}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBudget)
	defer cancel()
	var closed bool
	closed, stop.Cleanup = killUntilClosed(kctx, cli, ctr, s.User, s.Tag, done)
	if !closed {
		att.Close() // unblock the reader; the command may still run
		<-done
	}
	return 0, stop
}

// lostOutcome answers a command whose exit status never came back (the
// Engine connection broke, or the Engine kept reporting it running): it
// ran and may still run, so its outcome is unknown. What is left of it is
// killed, so that it does not outlive its call; a failure to confirm that
// is kept as evidence.
func lostOutcome(ctx context.Context, cli *client.Client, ctr string, s execSpec, cause error) error {
	if _, err := killAll(ctx, cli, ctr, s); err != nil {
		return fmt.Errorf("%w: %v (cleanup: %v)", envsdk.ErrUnknown, cause, err)
	}
	return fmt.Errorf("%w: %v; what was left of the command was killed", envsdk.ErrUnknown, cause)
}

// killAll kills the command of s, whose output stream is closed or was
// never opened, until a kill finds nothing left, within killBudget.
func killAll(ctx context.Context, cli *client.Client, ctr string, s execSpec) (bool, error) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBudget)
	defer cancel()
	closed := make(chan error)
	close(closed)
	return killUntilClosed(kctx, cli, ctr, s.User, s.Tag, closed)
}

// killUntilClosed kills the command's process group and every process
// carrying its tag until the output stream has closed and a kill finds no
// tagged process left. The stream closing alone proves nothing: the Engine
// closes it soon after the wrapper exits, even while an escaped process
// still holds it. A container found stopped holds nothing of the command
// any more, and one found gone (the Engine answers not found) ends the
// wait at once. It answers whether it saw the stream close (it took
// the stream's end from done, which the caller must then not wait for)
// and, when a kill did not confirm that nothing is left, why.
func killUntilClosed(ctx context.Context, cli *client.Client, ctr, user, tag string, done <-chan error) (closed bool, _ error) {
	wait := 20 * time.Millisecond
	var lastErr error
	var since string
	for {
		left, bound, err := killGroup(ctx, cli, ctr, user, tag, since)
		if bound != "" {
			since = bound
		}
		if cerrdefs.IsNotFound(err) {
			// The container is gone (removed out of band, docker rm -f
			// killing what ran in it first): nothing of the command runs
			// any more, and asking again would only find it gone again.
			return closed, nil
		}
		if cerrdefs.IsConflict(err) && containerStopped(ctx, cli, ctr) {
			// Nothing runs in a stopped container (a paused one is
			// still running): the command is dead.
			left, err = "", nil
		}
		switch {
		case err != nil:
			lastErr = err
		case left != "":
			lastErr = fmt.Errorf("processes %s of the command were still running", left)
		case closed:
			return true, nil
		default:
			lastErr = nil
		}
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			closed, done = true, nil
			continue // confirm with one more kill that nothing is left
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if lastErr == nil {
				lastErr = errors.New("the process group did not exit")
			}
			return closed, fmt.Errorf("kill process group of %s: %w", tag, lastErr)
		}
		if wait < 320*time.Millisecond {
			wait *= 2
		}
	}
}

// containerStopped reports whether the Engine says ctr is not running (a
// paused container is running: its processes are alive).
func containerStopped(ctx context.Context, cli *client.Client, ctr string) bool {
	info, err := cli.ContainerInspect(ctx, ctr)
	return err == nil && info.State != nil && !info.State.Running
}

// killGroup runs killScript once in the container and waits for it; it
// answers the pids of the processes it found (and killed), "" when none
// was left, and the start time from which it took untagged orphans for
// the command's (since, when not empty, is one an earlier run answered).
func killGroup(ctx context.Context, cli *client.Client, ctr, user, tag, since string) (left, bound string, _ error) {
	left, errOut, err := runKillExec(ctx, cli, ctr, user, "/bin/sh", "-c", killScript, "brain-kill", groupFile(tag), tag, since)
	return left, startBound(errOut), err
}

// startBound is the start time a kill script printed last on stderr
// ("since=" and clock ticks), "" when it printed none.
func startBound(errOut string) string {
	i := strings.LastIndex(errOut, "since=")
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(errOut[i+len("since="):], "\n")
	if _, err := strconv.ParseUint(v, 10, 64); err != nil {
		return ""
	}
	return v
}

// runKillExec runs a kill script (cmd) in the container, untagged, and
// waits for it; it answers the pids the script printed on stdout, joined,
// and what it printed on stderr, trimmed.
func runKillExec(ctx context.Context, cli *client.Client, ctr, user string, cmd ...string) (string, string, error) {
	created, err := cli.ContainerExecCreate(ctx, ctr, container.ExecOptions{
		User:         user,
		Cmd:          cmd,
		Env:          baseEnv,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return "", "", fmt.Errorf("create kill exec: %w", err)
	}
	att, err := attach(ctx, cli, created.ID, nil)
	if err != nil {
		return "", "", fmt.Errorf("start kill exec: %w", err)
	}
	defer att.Close()
	go func() {
		<-ctx.Done()
		att.Close()
	}()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &limitWriter{w: &errOut, n: 4 << 10}, att.Reader); err != nil && ctx.Err() != nil {
		return "", "", fmt.Errorf("kill exec: %w", ctx.Err())
	}
	return strings.Join(strings.Fields(out.String()), ", "), strings.TrimSpace(errOut.String()), nil
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
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

// notStarted answers an exec whose stream closed without the wrapper's
// start mark: the Engine did not start the command, and said why (what).
// The container stopped (errNotRunning) or is gone (errLost). The Engine
// may learn of a stop a moment after its runtime refused the exec, so a
// container still reported running is asked again a few times before the
// refusal is answered as it is. A refusal of the command's arguments and
// environment (E2BIG) is invalid_input.
func notStarted(ctx context.Context, cli *client.Client, ctr, what string) error {
	if argsTooLarge(what) {
		// The kernel refused the command's arguments and environment:
		// starting the container again would not change that.
		return errArgsTooLarge(what)
	}
	wait := 10 * time.Millisecond
	for i := 0; ; i++ {
		info, err := cli.ContainerInspect(ctx, ctr)
		switch {
		case ctx.Err() != nil:
			return &stopError{Cause: ctx.Err(), Before: "the Engine had not started the command, and its container was being looked at"}
		case cerrdefs.IsNotFound(err):
			return fmt.Errorf("%w: container %s: %v", errLost, ctr, err)
		case err != nil:
			return fmt.Errorf("the Engine did not start the command in %s (%s); inspect container: %w", ctr, what, err)
		case info.State == nil || !info.State.Running:
			return fmt.Errorf("%w: container %s: the Engine did not start the command: %s", errNotRunning, ctr, what)
		case i == 6:
			return fmt.Errorf("the Engine did not start the command in %s: %s", ctr, what)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		wait *= 2
	}
}

// startRefused answers, for an exec whose start failed without a stream,
// errNotRunning when its container is stopped and the exec never started
// (the Engine forgot it, as it does the execs of a stopped container, or
// kept it without a process); nil when the start may have reached a
// running command.
func startRefused(ctx context.Context, cli *client.Client, ctr, id string) error {
	info, err := cli.ContainerInspect(ctx, ctr)
	if err != nil || info.State == nil || info.State.Running || info.State.Paused {
		return nil
	}
	x, err := cli.ContainerExecInspect(ctx, id)
	if err == nil && (x.Running || x.Pid != 0) || err != nil && !cerrdefs.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%w: container %s stopped before the command started", errNotRunning, ctr)
}

// errNotRunning reports an exec refused because the container is stopped.
var errNotRunning = errors.New("container not running")
