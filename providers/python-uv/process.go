package pythonuv

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/brain-in-go/brain/providers/internal/fit"
	"github.com/brain-in-go/brain/providers/internal/proctree"
)

// procSpec describes one child process. It runs as a proctree run: the
// whole tree it grows, including processes that left its process group
// or session (setsid), is killed when the context ends, when stdout passes
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
	// CleanupErr reports a failure to kill the process tree or to collect
	// its output; it is evidence, not the cause.
	CleanupErr error
}

// drainGrace bounds how long output is collected once the tree is gone:
// a process the kill could not find may still hold the pipes, and it must
// not hold the invocation. With proctree's kill bound it keeps the answer
// of a stopped invocation, and its cleanup evidence, within envsdk's
// default stop grace.
const drainGrace = time.Second

// runProcess starts s and waits for it. The error is non-nil only when the
// process could not be started.
func runProcess(ctx context.Context, s procSpec) (procResult, error) {
	start := time.Now()
	var res procResult
	// Passing the output cap stops the run like a cancellation does, with
	// its own cause.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	stdout := &limitedBuffer{limit: s.StdoutLimit, overflow: func() { stop(errOverflow) }}
	stderr := &tailBuffer{keep: s.StderrKeep}
	stdin := s.Stdin
	if stdin == nil {
		stdin = []byte{}
	}
	r, err := proctree.Run(runCtx, proctree.Spec{
		Path:        s.Path,
		Args:        append([]string{s.Path}, s.Args...),
		Dir:         s.Dir,
		Env:         s.Env,
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		Marker:      RunMarkerEnv,
		OutputGrace: drainGrace,
	})
	var stopped *proctree.StoppedError
	var sweep *proctree.CleanupError
	switch {
	case errors.Is(err, proctree.ErrStart):
		return res, err
	case errors.As(err, &stopped):
		if errors.Is(stopped.Cause, errOverflow) {
			res.StdoutOverflow = true
		} else {
			res.Stopped = true
		}
		res.CleanupErr = stopped.Cleanup
	case errors.As(err, &sweep):
		res.CleanupErr = sweep.Err
	case err != nil:
		res.CleanupErr = err
	}
	res.StdoutOverflow = res.StdoutOverflow || stdout.overflowed()
	res.Stdout = stdout.bytes()
	res.Stderr, res.StderrTruncated = stderr.tail()
	res.ExitCode, res.Signal = r.ExitCode, r.Signal
	res.Elapsed = time.Since(start)
	return res, nil
}

// limitedBuffer keeps at most limit bytes and calls overflow once when
// more arrive (the excess is not kept). A zero limit discards everything.
// proctree writes it from one goroutine; the result is read after Run.
type limitedBuffer struct {
	limit    int64
	overflow func()
	mu       sync.Mutex
	buf      bytes.Buffer
	over     bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit <= 0 || b.over {
		return len(p), nil
	}
	if room := b.limit - int64(b.buf.Len()); int64(len(p)) > room {
		b.buf.Write(p[:room])
		b.over = true
		b.overflow()
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *limitedBuffer) overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

func (b *limitedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// RunMarkerEnv marks every process the provider starts, and the
// processes they start in turn, with the provider's pid and start time
// and the run: a run's kill finds its processes by it, and a provider
// started after one that was killed stops what the killed one left
// running (see New).
const RunMarkerEnv = "BRAIN_PYTHON_UV_RUN"

// errOverflow stops a run whose stdout passed its limit.
var errOverflow = errors.New("output limit exceeded")

// tailBuffer keeps the last keep bytes written to it (see fit.Tail).
// proctree writes it from one goroutine; the tail is read after Run.
type tailBuffer struct {
	keep int
	t    *fit.Tail
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if t.t == nil {
		t.t = fit.NewTail(int64(t.keep))
	}
	return t.t.Write(p)
}

// String returns the tail that tail reports.
func (t *tailBuffer) String() string {
	s, _ := t.tail()
	return s
}

// tail returns the kept tail as UTF-8, each byte that is not UTF-8
// replaced by U+FFFD, starting at a line boundary when the head was cut
// and a newline is near with a line after it, else at a character
// boundary, and whether anything written was left out. The newline that
// ends the last line is no boundary to start at: a last line longer than
// the tail (an exception quoting a large value) would leave nothing of
// the failure's evidence. A replacement is longer than the byte it
// replaces: the tail is cut again to stay within keep bytes.
func (t *tailBuffer) tail() (string, bool) {
	if t.t == nil {
		return "", false
	}
	s, truncated := string(t.t.Bytes()), t.t.Truncated()
	if truncated {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < 256 && strings.TrimRight(s[i+1:], "\r\n") != "" {
			s = s[i+1:]
		} else {
			// The cut may have fallen inside a character.
			s = runeSuffix(s)
		}
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if t.keep > 0 && len(s) > t.keep {
		s, truncated = runeSuffix(s[len(s)-t.keep:]), true
	}
	return s, truncated
}
