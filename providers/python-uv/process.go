package pythonuv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/brain-in-go/brain/providers/internal/proctree"
)

// procSpec describes one child process. It runs in its own process group,
// and the whole group is killed when the context ends, when stdout passes
// StdoutLimit, and after the leader exits (so background children never
// outlive the invocation).
type procSpec struct {
	Path  string
	Args  []string
	Dir   string
	Env   []string
	Stdin []byte
	// StdoutLimit bounds the stdout kept; 0 discards stdout.
	StdoutLimit int64
	// StderrKeep is how many trailing bytes of stderr are kept.
	StderrKeep int
}

// procResult is what became of a procSpec.
type procResult struct {
	Stdout          []byte
	StdoutOverflow  bool
	Stderr          string
	StderrTruncated bool
	// ExitCode is the leader's exit status, -1 when a signal ended it.
	ExitCode int
	Signal   string
	// Stopped reports that the context ended before the leader exited.
	Stopped bool
	Elapsed time.Duration
	// CleanupErr reports a failure to kill the process group or to collect
	// its output; it is evidence, not the cause.
	CleanupErr error
}

// drainGrace bounds how long output is collected after the process group
// was killed: a process that left the group (setsid) may still hold the
// pipes, and it must not hold the invocation.
const drainGrace = 2 * time.Second

// runProcess starts s and waits for it. The error is non-nil only when the
// process could not be started.
func runProcess(ctx context.Context, s procSpec) (procResult, error) {
	start := time.Now()
	var res procResult
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("stdin pipe: %w", err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW)
		return res, fmt.Errorf("stdout pipe: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW)
		return res, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(append(make([]string, 0, len(s.Env)+1), s.Env...), runMarker())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll(stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW)
		return res, fmt.Errorf("start %s: %w", s.Path, err)
	}
	// The child holds its ends now; ours must close so EOF can arrive.
	closeAll(stdinR, stdoutW, stderrW)
	pgid := cmd.Process.Pid

	go func() {
		// A process that does not read its input gets EPIPE here, which is
		// fine: the input is only offered.
		_, _ = stdinW.Write(s.Stdin)
		_ = stdinW.Close()
	}()

	overflow := make(chan struct{})
	var readers sync.WaitGroup
	var stdout bytes.Buffer
	tail := &tailBuffer{keep: s.StderrKeep}
	readers.Add(2)
	go func() {
		defer readers.Done()
		if err := readLimited(stdoutR, &stdout, s.StdoutLimit); err != nil {
			close(overflow)
			_, _ = io.Copy(io.Discard, stdoutR)
		}
	}()
	go func() {
		defer readers.Done()
		_, _ = io.Copy(tail, stderrR)
	}()

	// Wait for the leader to exit without reaping it: while it is a
	// zombie its pid (the group id) cannot be reused, so killing the group
	// afterwards cannot hit an unrelated process.
	exited := make(chan error, 1)
	reaped := false
	go func() {
		r, err := waitExited(cmd)
		reaped = r
		exited <- err
	}()

	var cleanup []error
	kill := func() {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			cleanup = append(cleanup, fmt.Errorf("kill process group %d: %w", pgid, err))
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			cleanup = append(cleanup, fmt.Errorf("wait for process %d: %w", pgid, err))
		}
	case <-ctx.Done():
		res.Stopped = true
		kill()
		<-exited
	case <-overflow:
		res.StdoutOverflow = true
		kill()
		<-exited
	}
	// Kill whatever the leader left behind in its group, then reap it.
	kill()
	var waitErr error
	if !reaped {
		waitErr = cmd.Wait()
	}
	if waitErr != nil {
		var exit *exec.ExitError
		if !errors.As(waitErr, &exit) {
			cleanup = append(cleanup, fmt.Errorf("reap process %d: %w", pgid, waitErr))
		}
	}

	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	timer := time.NewTimer(drainGrace)
	select {
	case <-drained:
		timer.Stop()
	case <-timer.C:
		cleanup = append(cleanup, errors.New("output pipes still held open by a process outside the group; closed them"))
		closeAll(stdoutR, stderrR)
		<-drained
	}
	// A holder outside the group may never read the input; unblock the
	// writer.
	closeAll(stdoutR, stderrR, stdinW)

	select {
	case <-overflow:
		res.StdoutOverflow = true
	default:
	}
	res.Stdout = stdout.Bytes()
	res.Stderr, res.StderrTruncated = tail.String(), tail.truncated
	res.ExitCode = -1
	if st := cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
	}
	res.Elapsed = time.Since(start)
	res.CleanupErr = errors.Join(cleanup...)
	return res, nil
}

// RunMarkerEnv marks every process the provider starts, and the
// processes they start in turn, with the provider's pid and start time:
// a provider started after one that was killed stops what the killed one
// left running (see New).
const RunMarkerEnv = "BRAIN_PYTHON_UV_RUN"

// runMarker is the RunMarkerEnv entry of one run: OWNER.RANDOM.
func runMarker() string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return RunMarkerEnv + "=" + proctree.OwnerMark() + "." + hex.EncodeToString(id[:])
}

var errOverflow = errors.New("output limit exceeded")

// readLimited copies r into buf until EOF; it returns errOverflow as soon
// as more than limit bytes arrive (the excess is not kept). A zero limit
// discards everything.
func readLimited(r io.Reader, buf *bytes.Buffer, limit int64) error {
	if limit <= 0 {
		_, _ = io.Copy(io.Discard, r)
		return nil
	}
	n, _ := io.Copy(buf, io.LimitReader(r, limit+1))
	if n > limit {
		buf.Truncate(int(limit))
		return errOverflow
	}
	return nil
}

// tailBuffer keeps the last keep bytes written to it.
type tailBuffer struct {
	keep      int
	buf       []byte
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if t.keep <= 0 {
		t.truncated = t.truncated || n > 0
		return n, nil
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.keep; over > 0 {
		// Trim in bulk so repeated small writes stay linear.
		if over > t.keep || len(t.buf) > 2*t.keep {
			t.buf = append(t.buf[:0], t.buf[over:]...)
		} else {
			t.buf = t.buf[over:]
		}
		t.truncated = true
	}
	return n, nil
}

// String returns the kept tail, starting at a line boundary when the head
// was cut and a newline is near.
func (t *tailBuffer) String() string {
	s := string(t.buf)
	if t.truncated {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < 256 {
			s = s[i+1:]
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
