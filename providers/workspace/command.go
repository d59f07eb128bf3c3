package workspace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/providers/internal/fit"
	"github.com/brain-in-go/brain/providers/internal/proctree"
)

// MarkerEnv marks every process of a command (see providers/internal/proctree).
const MarkerEnv = "BRAIN_WORKSPACE_RUN"

var errCommandTimeout = errors.New("workspace: command timeout")

func runCommand(k *call) (any, error) {
	var in toolset.CommandInput
	if err := toolset.Decode(k.x.Input, &in); err != nil {
		return nil, err
	}
	opts := &k.b.p.opts
	argv := in.Args()
	if !opts.allowsProgram(argv[0]) {
		return nil, envsdk.Failf("not_allowed", "program %q is not allowed by the operator", filepath.Base(argv[0]))
	}
	cwd, err := k.resolveDir(in.Cwd)
	if err != nil {
		return nil, err
	}
	for name := range in.Env {
		if !envName.MatchString(name) || name == MarkerEnv {
			return nil, invalidInput("input.env: %q is not an allowed variable name", name)
		}
		if !opts.allowsVariable(name) {
			return nil, notAllowedVariable("input.env", name)
		}
	}
	// The binding's variables were checked at setup, perhaps under other
	// options.
	for name := range k.cfg.Env {
		if !opts.allowsVariable(name) {
			return nil, notAllowedVariable("configuration.env", name)
		}
	}
	ctx := k.ctx
	var cancel context.CancelFunc = func() {}
	// A command without a deadline is bounded by the binding's timeout, or
	// else the operator's; the input's own timeout only shortens a bound.
	var timeout time.Duration
	if k.x.Deadline.IsZero() {
		timeout = opts.CommandTimeout
		if k.cfg.TimeoutMs > 0 {
			timeout = millis(k.cfg.TimeoutMs)
		}
	}
	if in.TimeoutMs > 0 && (timeout <= 0 || millis(in.TimeoutMs) < timeout) {
		timeout = millis(in.TimeoutMs)
	}
	if timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errCommandTimeout)
	}
	defer cancel()

	// Measured while no write or edit runs: one holds the file it
	// replaces and the replacement at once; the measure is part of the
	// command and stops at its timeout.
	// The wait for a write or edit to finish is part of the command
	// too: one without a deadline may hold the workspace for long.
	if err := k.sp.grow.lockContext(ctx); err != nil {
		return nil, notStarted(ctx, timeout, "while it waited for a write or edit of the workspace to finish")
	}
	err = k.checkLimitsWithin(ctx, 0, 0)
	k.sp.grow.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, notStarted(ctx, timeout, "before the workspace was measured against its limits")
		}
		return nil, err
	}
	env := k.environment(in.Env)
	path, err := lookPath(argv[0], cwd, env)
	if err != nil {
		return nil, envsdk.Failf(envapi.CodeExecutionFailed, "%v", err)
	}

	em := newEmitter(ctx, k.x.Invocation)
	limit := k.outputLimit()
	stdout := toolset.NewBudget(int64(limit)).Head(func(p []byte) { em.add("stdout", p) })
	// The start of stdout and the end of stderr (where a failure says
	// what went wrong) are kept, as fit.Command cuts an answer.
	stderr := newTail(limit, func(p []byte) { em.add("stderr", p) })
	spec := proctree.Spec{
		Path: path, Args: argv, Dir: cwd, Env: env,
		Stdout: stdout, Stderr: stderr, Marker: MarkerEnv,
	}
	if in.Stdin != nil {
		spec.Stdin = []byte(*in.Stdin)
	}
	res, runErr := proctree.Run(ctx, spec)
	if emitErr := em.close(); emitErr != nil && ctx.Err() == nil {
		opts.Logger.Warn("stream command output", "binding", k.b.key, "error", emitErr)
	}

	out := toolset.CommandOutput{ExitCode: res.ExitCode, Signal: res.Signal}
	head := stdout.Bytes()
	if stdout.Truncated() {
		// The limit cut the start of stdout as it was written: a
		// character it left unfinished is dropped, not answered in part.
		head = head[:len(head)-toolset.IncompleteTail(head)]
	}
	out.Stdout, out.Stderr = string(head), string(stderr.Bytes())
	out.Truncated = stdout.Truncated() || stderr.Truncated()
	// The output goes into the answer, or into a failure's details beside
	// the cleanup evidence: it is cut to what leaves room for that.
	room := fit.Room(opts.MaxAnswerBytes)

	var stopped *proctree.StoppedError
	var sweep *proctree.CleanupError
	switch {
	case runErr == nil:
		return fit.Command(out, room), nil
	case errors.As(runErr, &stopped):
		out = fit.Command(out, room-evidenceLen(stopped.Cleanup))
		code, msg := envapi.CodeCancelled, "the command was cancelled"
		if errors.Is(context.Cause(ctx), errStopping) {
			msg = "the command was stopped: the provider is stopping"
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code, msg = envapi.CodeTimeout, "the command's deadline expired"
			if errors.Is(context.Cause(ctx), errCommandTimeout) {
				msg = fmt.Sprintf("the command's timeout of %s expired", timeout)
			}
		}
		first := envsdk.Fail(code, msg).WithDetails(map[string]any{"stdout": out.Stdout, "stderr": out.Stderr, "truncated": out.Truncated})
		return nil, envsdk.KeepFirst(first, stopped.Cleanup)
	case errors.As(runErr, &sweep):
		out = fit.Command(out, room-evidenceLen(sweep.Err))
		return nil, envsdk.Failf(envapi.CodeCleanupFailed, "the command finished but left processes behind: %v", sweep.Err).
			WithDetails(map[string]any{"output": out})
	case errors.Is(runErr, proctree.ErrStart):
		return nil, envsdk.Failf(envapi.CodeExecutionFailed, "%v", runErr)
	}
	return nil, fmt.Errorf("run command: %w", runErr)
}

// notStarted answers a command stopped, as ctx's cause says, before it
// started, while it did what when says.
func notStarted(ctx context.Context, timeout time.Duration, when string) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCommandTimeout):
		return envsdk.Failf(envapi.CodeTimeout, "the command's timeout of %s expired %s; the command did not start", timeout, when)
	case errors.Is(cause, envsdk.ErrDeadline), errors.Is(cause, context.DeadlineExceeded):
		return envsdk.Failf(envapi.CodeTimeout, "the execute's deadline expired %s; the command did not start", when)
	case errors.Is(cause, errStopping):
		return envsdk.Failf(envapi.CodeCancelled, "the provider is stopping: the command was stopped %s and did not start", when)
	}
	return envsdk.Failf(envapi.CodeCancelled, "the execute was cancelled %s; the command did not start", when)
}

// evidenceLen is what err's message takes in an answer, as JSON (a
// failure's message or its details.cleanup_error); 0 for nil.
func evidenceLen(err error) int {
	if err == nil {
		return 0
	}
	return len(`,"cleanup_error":""`) + fit.TextLen([]byte(err.Error()))
}

// notAllowedVariable refuses a variable that would make an allowed program
// load code of the session's choosing.
func notAllowedVariable(field, name string) error {
	return envsdk.Failf("not_allowed", "%s: %s is not allowed while the operator restricts the programs commands may run", field, name).
		WithDetails(map[string]string{"field": field, "variable": name})
}

// millis converts a positive count of milliseconds to a duration, the
// longest one for a count a duration cannot hold.
func millis(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// environment builds a command's environment: the operator's allow-list
// from the provider's environment, WORKSPACE, the binding's variables,
// then the input's.
func (k *call) environment(extra map[string]string) []string {
	vars := map[string]string{}
	for _, name := range k.b.p.opts.EnvAllow {
		if v, ok := os.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	vars["WORKSPACE"] = k.sp.path
	for n, v := range k.cfg.Env {
		vars[n] = v
	}
	for n, v := range extra {
		vars[n] = v
	}
	env := make([]string, 0, len(vars))
	for n, v := range vars {
		env = append(env, n+"="+v)
	}
	return env
}

// lookPath finds name like a shell would with the command's PATH; a name
// with a slash is taken relative to dir.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if err := executable(name); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return name, nil
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, name); executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q not found in PATH", name)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
