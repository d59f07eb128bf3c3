package proctree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultMarker is the environment variable that marks every process of a
// run unless Spec.Marker names another.
const DefaultMarker = "BRAIN_PROCTREE_RUN"

// Spec describes one program run.
type Spec struct {
	// Path is the program to execute and Args its argv (Args[0] included).
	Path string
	Args []string
	// Dir is the working directory and Env the complete environment.
	Dir string
	Env []string
	// Stdin, when not nil, is written to the program's standard input,
	// which is then closed; a nil Stdin reads from the null device.
	Stdin []byte
	// Stdout and Stderr receive the output as it arrives, each from its
	// own goroutine; nil discards.
	Stdout, Stderr io.Writer
	// Marker names the environment variable that marks the run's
	// processes; empty means DefaultMarker.
	Marker string
	// KillTimeout bounds how long a kill may take before Run gives up and
	// reports the survivors; zero means 2.5 s. With the short wait for a
	// surviving leader and OutputGrace it keeps a stopped command's answer
	// within envsdk's default stop grace (5 s), so that the answer carries
	// this evidence rather than the SDK's own.
	KillTimeout time.Duration
	// OutputGrace bounds how long Run waits for output pipes held open by
	// processes it could not find once the tree is gone; zero means 1 s.
	OutputGrace time.Duration
}

// Result is how the leader ended.
type Result struct {
	// ExitCode is the leader's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the leader, if any.
	Signal string
}

// StoppedError reports that ctx ended before the leader did and the tree
// was killed. Cause is context.Cause(ctx); Cleanup is non-nil when some
// process could not be killed. errors.Is sees through to Cause.
type StoppedError struct {
	Cause   error
	Cleanup error
}

func (e *StoppedError) Error() string {
	if e.Cleanup != nil {
		return fmt.Sprintf("stopped: %v (cleanup: %v)", e.Cause, e.Cleanup)
	}
	return fmt.Sprintf("stopped: %v", e.Cause)
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// CleanupError reports that the leader exited on its own but processes it
// left behind could not all be killed. The Result returned with it is valid.
type CleanupError struct{ Err error }

func (e *CleanupError) Error() string { return "sweep leftover processes: " + e.Err.Error() }
func (e *CleanupError) Unwrap() error { return e.Err }

// ErrStart wraps a failure to start the program.
var ErrStart = errors.New("start program")

// Run starts the program in a new process group and waits for it. When ctx
// ends first the whole tree is killed and the error is a *StoppedError.
// After the leader exits, the processes it left behind are killed too; a
// failure to do so is a *CleanupError next to a valid Result.
func Run(ctx context.Context, s Spec) (Result, error) {
	if len(s.Args) == 0 {
		return Result{}, fmt.Errorf("%w: empty argv", ErrStart)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, &StoppedError{Cause: context.Cause(ctx)}
	}
	markerName := s.Marker
	if markerName == "" {
		markerName = DefaultMarker
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	marker := markerName + "=" + OwnerMark() + "." + hex.EncodeToString(id[:])

	// The leader starts inside a fresh cgroup where the kernel offers one;
	// when starting into it fails, it starts without (a failed start runs
	// nothing, so the second attempt cannot run the program twice).
	cg := newCgroup()
	cmd, p, err := start(s, marker, cg)
	if err != nil && cg != nil {
		_ = cg.remove()
		cg = nil
		cmd, p, err = start(s, marker, nil)
	}
	if err != nil {
		return Result{}, err
	}
	if cg != nil {
		cg.started()
	}
	t := &tree{leader: cmd.Process.Pid, marker: []byte(marker), self: os.Getpid(), born: time.Now(), cg: cg}
	// The leader is not reaped before Wait, so its stat is readable.
	if t.start, err = startTime(t.leader); err != nil {
		t.start = 0 // consider every process; slower, still correct
	}

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	killTimeout := s.KillTimeout
	if killTimeout <= 0 {
		killTimeout = 2500 * time.Millisecond
	}
	var stopErr *StoppedError
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		stopErr = &StoppedError{Cause: context.Cause(ctx)}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		stopErr.Cleanup = t.stop(kctx)
		cancel()
		if stopErr.Cleanup == nil {
			waitErr = <-waited
		} else {
			select { // the leader may be one of the survivors
			case waitErr = <-waited:
			case <-time.After(min(killTimeout, 500*time.Millisecond)):
			}
		}
	}
	var sweepErr error
	if stopErr == nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
		sweepErr = t.stop(kctx)
		cancel()
	}
	if err := t.release(); err != nil {
		if stopErr != nil {
			stopErr.Cleanup = errors.Join(stopErr.Cleanup, err)
		} else {
			sweepErr = errors.Join(sweepErr, err)
		}
	}
	grace := s.OutputGrace
	if grace <= 0 {
		grace = time.Second
	}
	p.finish(grace)

	res := Result{ExitCode: -1}
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && stopErr == nil {
		return res, fmt.Errorf("wait for %s: %w", s.Args[0], waitErr)
	}
	if stopErr != nil {
		return res, stopErr
	}
	if sweepErr != nil {
		return res, &CleanupError{Err: sweepErr}
	}
	return res, nil
}

// OwnerMark names this process as the owner of its runs: its pid and
// start time ("PID.START"). A run's marker value begins with it and its
// cgroup is named by it, so that a later process can tell the runs of a
// process that died from those of one that still runs (see ReapOrphans).
// Callers that start processes of their own mark them
// NAME=OwnerMark().RANDOM for ReapOrphans(ctx, NAME).
var OwnerMark = sync.OnceValue(func() string {
	start, _ := startTime(os.Getpid())
	return fmt.Sprintf("%d.%d", os.Getpid(), start)
})

// start starts the leader of s with marker in its environment, inside cg
// when it is not nil.
func start(s Spec, marker string, cg *cgroup) (*exec.Cmd, *pipes, error) {
	cmd := &exec.Cmd{
		Path:        s.Path,
		Args:        s.Args,
		Dir:         s.Dir,
		Env:         append(append(make([]string, 0, len(s.Env)+1), s.Env...), marker),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if cg != nil {
		cg.attach(cmd.SysProcAttr)
	}
	p, err := newPipes(cmd, s)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if err := cmd.Start(); err != nil {
		p.abort()
		return nil, nil, fmt.Errorf("%w %s: %w", ErrStart, s.Args[0], err)
	}
	p.started()
	return cmd, p, nil
}

// stop kills the run's cgroup, when it has one, then every member the
// scan finds: a member that left the cgroup is still caught by the scan.
func (t *tree) stop(ctx context.Context) error {
	var cgErr error
	if t.cg != nil {
		cgErr = t.cg.kill(ctx)
	}
	return errors.Join(cgErr, t.kill(ctx))
}

// release removes the run's cgroup.
func (t *tree) release() error {
	if t.cg == nil {
		return nil
	}
	return t.cg.remove()
}
