package pythonuv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/brain-in-go/brain/internal/fsutil"
	"github.com/brain-in-go/brain/internal/progress"
)

// PreparationEventType is the event type of preparation progress emitted
// through an execution's callback (when it grants emit).
const PreparationEventType = "python_uv.preparation"

// Preparation phases and statuses.
const (
	PhaseSync  = "sync"  // uv sync --locked --project DIR
	PhaseSetup = "setup" // uv run --no-sync --project DIR python -m SETUP

	StatusStarted  = "started"
	StatusFinished = "finished"
	StatusFailed   = "failed"
)

// PreparationEvent is the data of one preparation progress event.
type PreparationEvent struct {
	Project string `json:"project"`
	Phase   string `json:"phase"`
	Status  string `json:"status"`
	// ElapsedMS is the phase's duration so far (0 when it starts).
	ElapsedMS int64 `json:"elapsed_ms"`
	// ExitCode is uv's exit status of a finished or failed phase.
	ExitCode *int `json:"exit_code,omitempty"`
}

// PreparationFailure is the details of every preparation_failed failure
// of a directory: the evidence of the one attempt that was made.
type PreparationFailure struct {
	Project         string `json:"project"`
	Phase           string `json:"phase"`
	Reason          string `json:"reason"`
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	Stderr          string `json:"stderr"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	ElapsedMS       int64  `json:"elapsed_ms"`
}

// preparation is the one preparation of an installation directory, shared
// by every caller (any session, any project naming that directory) until
// a Reload changes what it depends on. Its outcome, success or failure, is
// final.
type preparation struct {
	dir     string
	recipe  recipe
	project string // the project whose first use started it
	done    chan struct{}
	failure *PreparationFailure // set before done closes
	// installed is the installation a successful preparation left, set
	// before done closes.
	installed installation
	// progress, when set, is told of each phase as it starts and ends.
	progress progress.Func

	mu      sync.Mutex
	events  []PreparationEvent
	changed chan struct{} // closed and replaced on each new event
	// lost says how the installation was lost after it was prepared;
	// like a failure it is final.
	lost string
	// reported holds the bindings the loss was reported to.
	reported map[string]bool
	// superseded says that a Reload replaced the preparation while it
	// ran; supersede (set before it runs) stops its sync.
	superseded bool
	supersede  context.CancelCauseFunc

	// users counts the executes running on the installation, and retired
	// says that a Reload forgot the preparation; both are guarded by the
	// provider's mu. released closes once the preparation is retired and
	// no execute runs on it any more: a preparation that replaces it
	// syncs the directory only then.
	users    int
	retired  bool
	released chan struct{}
}

// errSuperseded stops the sync of a preparation a Reload replaced.
var errSuperseded = errors.New("the configuration was reloaded")

// markSuperseded records that a Reload replaced the preparation and stops
// its sync, or its wait for the preparation before it.
func (pr *preparation) markSuperseded() {
	pr.mu.Lock()
	pr.superseded = true
	pr.mu.Unlock()
	if pr.supersede != nil {
		pr.supersede(errSuperseded)
	}
}

// isSuperseded reports whether a Reload replaced the preparation.
func (pr *preparation) isSuperseded() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.superseded
}

// loss answers how the installation was lost, checking it again unless a
// loss was already recorded, and records it; "" when it was not.
func (pr *preparation) loss() string {
	pr.mu.Lock()
	why := pr.lost
	pr.mu.Unlock()
	if why != "" {
		return why
	}
	if why = pr.installed.check(); why == "" {
		return ""
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.lost == "" {
		pr.lost = why
	}
	return pr.lost
}

// checkLost answers how the installation was lost, checking it again
// unless a loss was already recorded, and whether the binding key has yet
// to hear of it (each binding is told once).
func (pr *preparation) checkLost(key string) (why string, tell bool) {
	if why = pr.loss(); why == "" {
		return "", false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.reported == nil {
		pr.reported = map[string]bool{}
	}
	tell = !pr.reported[key]
	pr.reported[key] = true
	return why, tell
}

func newPreparation(proj project, r recipe) *preparation {
	return &preparation{dir: proj.dir, recipe: r, project: proj.name, done: make(chan struct{}), changed: make(chan struct{}), released: make(chan struct{})}
}

func (pr *preparation) record(ev PreparationEvent) {
	if pr.progress != nil {
		step := "uv sync --locked"
		if ev.Phase == PhaseSetup {
			step = "setup"
		}
		e := progress.Event{Subject: "project " + ev.Project, Step: step, Status: ev.Status, Elapsed: time.Duration(ev.ElapsedMS) * time.Millisecond}
		if ev.Status == StatusFailed && ev.ExitCode != nil {
			e.Detail = fmt.Sprintf("exit status %d", *ev.ExitCode)
		}
		pr.progress(e)
	}
	pr.mu.Lock()
	pr.events = append(pr.events, ev)
	close(pr.changed)
	pr.changed = make(chan struct{})
	pr.mu.Unlock()
}

// ready reports whether the preparation has ended, and how.
func (pr *preparation) ready() (ended bool, failure *PreparationFailure) {
	select {
	case <-pr.done:
		return true, pr.failure
	default:
		return false, nil
	}
}

// wait blocks until the preparation ends or ctx does, handing each
// progress event to deliver as it happens (events recorded before the call
// included). The error is ctx's.
func (pr *preparation) wait(ctx context.Context, deliver func(PreparationEvent)) (*PreparationFailure, error) {
	seen := 0
	next := func() ([]PreparationEvent, chan struct{}) {
		pr.mu.Lock()
		defer pr.mu.Unlock()
		evs := pr.events[seen:]
		seen = len(pr.events)
		return evs, pr.changed
	}
	for {
		evs, changed := next()
		for _, ev := range evs {
			deliver(ev)
		}
		select {
		case <-pr.done:
			evs, _ := next()
			for _, ev := range evs {
				deliver(ev)
			}
			return pr.failure, nil
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// run performs the preparation once and closes done. ctx bounds the
// whole preparation; syncCtx, derived from it, ends too when a Reload
// replaces the preparation, which stops the sync but never a setup module
// already running. prev, when not nil, is a preparation of the same
// directory that a Reload retired; this one touches the directory only
// once prev ended and no execute runs on its installation any more, and
// its timeout counts from then.
func (pr *preparation) run(ctx, syncCtx context.Context, s *settings, proj project, prev *preparation, log *slog.Logger) {
	defer close(pr.done)
	if prev != nil {
		if err := pr.awaitPrevious(ctx, syncCtx, prev, proj, log); err != nil {
			pr.failure = &PreparationFailure{Project: proj.name, Phase: PhaseSync, ExitCode: -1,
				Reason: fmt.Sprintf("stopped while waiting for the previous preparation: %v", err)}
			return
		}
	}
	deadline := time.Now().Add(s.preparationTimeout)
	timedOut := fmt.Errorf("the preparation passed its timeout of %s (preparation_timeout_ms)", s.preparationTimeout)
	ctx, cancel := context.WithDeadlineCause(ctx, deadline, timedOut)
	defer cancel()
	syncCtx, cancelSync := context.WithDeadlineCause(syncCtx, deadline, timedOut)
	defer cancelSync()
	start := time.Now()
	phases := []struct {
		name string
		args []string
	}{{PhaseSync, []string{"sync", "--locked", "--project", proj.dir}}}
	if proj.setup != "" {
		phases = append(phases, struct {
			name string
			args []string
		}{PhaseSetup, []string{"run", "--no-sync", "--project", proj.dir, "python", "-m", proj.setup}})
	}
	env := s.env()
	for _, ph := range phases {
		phaseCtx := syncCtx
		if ph.name == PhaseSetup {
			if setupRan(venvPath(proj.dir, env), proj.setup) {
				// An earlier provider ran it on this installation.
				log.Info("setup already ran on this installation", "project", proj.name, "directory", proj.dir, "setup", proj.setup)
				continue
			}
			if syncCtx.Err() != nil {
				pr.failure = &PreparationFailure{Project: proj.name, Phase: PhaseSetup, ExitCode: -1,
					Reason: fmt.Sprintf("stopped before the setup: %v", context.Cause(syncCtx)), ElapsedMS: time.Since(start).Milliseconds()}
				log.Info("preparation stopped before its setup", "project", proj.name, "directory", proj.dir, "reason", pr.failure.Reason)
				return
			}
			reason, err := startSetup(venvPath(proj.dir, env), proj.setup)
			if reason != "" {
				pr.failure = &PreparationFailure{Project: proj.name, Phase: PhaseSetup, ExitCode: -1, Reason: reason, ElapsedMS: time.Since(start).Milliseconds()}
				log.Error("preparation failed; it stays failed until the configuration of this project changes",
					"project", proj.name, "directory", proj.dir, "phase", ph.name, "reason", reason)
				return
			}
			if err != nil {
				// A virtual environment that takes no file (a read-only
				// image) records neither the start nor the end: the setup
				// runs at each start of the provider, as it always did.
				log.Warn("the setup's start could not be recorded: a provider started again will run it again",
					"project", proj.name, "directory", proj.dir, "error", err)
			}
			phaseCtx = ctx
		}
		pr.record(PreparationEvent{Project: proj.name, Phase: ph.name, Status: StatusStarted})
		log.Info("preparation phase started", "project", proj.name, "directory", proj.dir, "phase", ph.name)
		res, err := runProcess(phaseCtx, procSpec{Path: s.uv, Args: ph.args, Dir: proj.dir, Env: env, StderrKeep: s.stderrLimit})
		f := phaseFailure(phaseCtx, proj.name, ph.name, s.uv, res, err)
		ev := PreparationEvent{Project: proj.name, Phase: ph.name, Status: StatusFinished, ElapsedMS: res.Elapsed.Milliseconds()}
		if err == nil {
			code := res.ExitCode
			ev.ExitCode = &code
		}
		if res.CleanupErr != nil {
			log.Warn("preparation phase cleanup", "project", proj.name, "phase", ph.name, "error", res.CleanupErr)
		}
		if ph.name == PhaseSetup && f != nil && res.CleanupErr == nil {
			// The setup ended, failed or stopped, with nothing of it left
			// running: a provider started again may run it again.
			if err := endSetup(venvPath(proj.dir, env)); err != nil {
				log.Warn("the failed setup's start stays recorded: a provider started again will not run it until the file is removed",
					"project", proj.name, "directory", proj.dir, "error", err)
			}
		}
		if f != nil {
			ev.Status = StatusFailed
			pr.record(ev)
			pr.failure = f
			if errors.Is(context.Cause(phaseCtx), errSuperseded) {
				log.Info("preparation stopped: the configuration was reloaded while it ran", "project", proj.name, "directory", proj.dir, "phase", ph.name)
				return
			}
			log.Error("preparation failed; it stays failed until the configuration of this project changes",
				"project", proj.name, "directory", proj.dir, "phase", ph.name, "reason", f.Reason,
				"elapsed", res.Elapsed, "stderr", f.Stderr)
			return
		}
		pr.record(ev)
		log.Info("preparation phase finished", "project", proj.name, "directory", proj.dir, "phase", ph.name, "elapsed", res.Elapsed)
		if ph.name == PhaseSetup {
			if err := markSetupRan(venvPath(proj.dir, env), proj.setup); err != nil {
				log.Warn("setup ran, but recording it failed: its start stays recorded, and a provider started again will not run it until that file is removed",
					"project", proj.name, "directory", proj.dir, "error", err)
			} else if err := endSetup(venvPath(proj.dir, env)); err != nil {
				log.Warn("setup ran, but its start stays recorded", "project", proj.name, "directory", proj.dir, "error", err)
			}
		}
	}
	in, err := identifyInstallation(proj.dir, env)
	if err != nil {
		pr.failure = &PreparationFailure{Project: proj.name, Phase: phases[len(phases)-1].name, ExitCode: 0,
			Reason: fmt.Sprintf("the installation is not there after preparing it: %v", err), ElapsedMS: time.Since(start).Milliseconds()}
		log.Error("preparation failed; it stays failed until the configuration of this project changes",
			"project", proj.name, "directory", proj.dir, "reason", pr.failure.Reason)
		return
	}
	pr.installed = in
	log.Info("project prepared", "project", proj.name, "directory", proj.dir, "elapsed", time.Since(start))
}

// awaitPrevious waits until prev, the preparation this one replaces, has
// ended and no execute runs on its installation any more: a sync of the
// directory would change the packages of a running invocation under it,
// and a setup must not run beside another. When syncCtx ends first (a
// Reload replaced this preparation too) it still waits, bounded by ctx
// alone, so that the preparation replacing this one, which waits for this
// one, never touches the directory before prev let go of it; it then
// answers syncCtx's cause. It answers ctx's cause when ctx ends (the
// provider is closing).
func (pr *preparation) awaitPrevious(ctx, syncCtx context.Context, prev *preparation, proj project, log *slog.Logger) error {
	var stopped error
	for _, w := range []struct {
		ch  <-chan struct{}
		msg string
	}{
		{prev.done, "preparation waits for the preparation it replaces to end"},
		{prev.released, "preparation waits for the executes of the preparation it replaces to end"},
	} {
		select {
		case <-w.ch:
			continue
		default:
		}
		log.Info(w.msg, "project", proj.name, "directory", proj.dir)
		if stopped == nil {
			select {
			case <-w.ch:
				continue
			case <-syncCtx.Done():
				stopped = context.Cause(syncCtx)
			}
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return stopped
}

// phaseFailure turns one phase's process result into a failure, or nil
// when the phase succeeded.
func phaseFailure(ctx context.Context, projectName, phase, uv string, res procResult, startErr error) *PreparationFailure {
	f := &PreparationFailure{Project: projectName, Phase: phase, ExitCode: res.ExitCode, Signal: res.Signal,
		Stderr: res.Stderr, StderrTruncated: res.StderrTruncated, ElapsedMS: res.Elapsed.Milliseconds()}
	switch {
	case startErr != nil:
		f.ExitCode = -1
		f.Reason = fmt.Sprintf("could not start %s: %v", uv, startErr)
	case res.Stopped:
		f.Reason = fmt.Sprintf("stopped: %v", context.Cause(ctx))
	case res.ExitCode != 0:
		f.Reason = fmt.Sprintf("uv exited with status %d", res.ExitCode)
		if res.Signal != "" {
			f.Reason = "uv was killed by " + res.Signal
		}
	default:
		return nil
	}
	return f
}

// env is the reduced process environment of uv and Python. Python's
// standard streams are UTF-8, the encoding of the JSON they carry,
// whatever the operator's environment says.
func (s *settings) env() []string {
	return childEnv(os.Environ(), s.envAllow, map[string]string{"UV_PYTHON": s.python, "UV_CACHE_DIR": s.cacheDir, "PYTHONIOENCODING": "utf-8"})
}

// setupMarker is the file, in an installation's virtual environment, that
// records the setup module that ran on it: the setup runs once per
// installation, not once per provider process. A virtual environment made
// afresh has none, and runs it again.
const setupMarker = ".brain-setup"

// setupStartedMarker is the file in the virtual environment that records
// a setup module started and has not yet ended.
const setupStartedMarker = ".brain-setup-started"

// setupRan reports whether module's setup ran on the virtual environment
// venv.
func setupRan(venv, module string) bool {
	data, err := os.ReadFile(filepath.Join(venv, setupMarker))
	return err == nil && string(data) == module+"\n"
}

// markSetupRan records that module's setup ran on venv, durably.
func markSetupRan(venv, module string) error {
	return fsutil.WriteFileAtomic(filepath.Join(venv, setupMarker), []byte(module+"\n"), 0o644)
}

// startSetup records, durably, that module's setup starts on venv; the
// error says the record could not be made. When a setup of module started
// there before and the provider that ran it stopped (killed, crashed)
// before it saw the setup end, whether that setup did its work, or part
// of it, is unknown: it must not run again, and the reason answered says
// so and how to go on.
func startSetup(venv, module string) (reason string, err error) {
	path := filepath.Join(venv, setupStartedMarker)
	if data, err := os.ReadFile(path); err == nil && string(data) == module+"\n" {
		return fmt.Sprintf("setup %s started on this installation, but the provider that ran it stopped before it ended, "+
			"so whether it did its work is unknown; it is not run again: check the installation, then remove %s "+
			"(or the virtual environment) and restart the provider", module, path), nil
	}
	return "", fsutil.WriteFileAtomic(path, []byte(module+"\n"), 0o644)
}

// endSetup removes the record startSetup made in venv, durably, once the
// provider saw the setup end.
func endSetup(venv string) error {
	if err := os.Remove(filepath.Join(venv, setupStartedMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fsutil.SyncDir(venv)
}
