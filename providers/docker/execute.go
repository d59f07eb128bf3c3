package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/providers/internal/fit"
)

// call is one execute as a tool sees it.
type call struct {
	p     *Provider
	c     *envsdk.Ctx
	x     *envsdk.Execution
	b     *binding
	a     *allocation
	ctx   context.Context
	tag   string
	lost  bool // a resource loss was already reported
	input json.RawMessage
	// release ends what a tool derived ctx with (a command's
	// timeout_ms), once the execute's answer is decided: until then
	// ctx says why it ended, if it did.
	release []context.CancelFunc
}

var tools = map[string]func(*call) (any, error){}

func init() {
	tools[toolset.ToolCommand] = runCommand
	tools[toolset.ToolRead] = runRead
	tools[toolset.ToolWrite] = runWrite
	tools[toolset.ToolList] = runList
	tools[toolset.ToolEdit] = runEdit
}

// Execute runs one tool of the standard tool set (package toolset) in the
// binding's container, allocating the container and volume on first use.
func (p *Provider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx, leave, err := p.enter(c, true)
	if err != nil {
		return envapi.Receipt{}, err
	}
	defer leave()
	run, err := toolset.Select(x.Implementation, tools)
	if err != nil {
		return envapi.Receipt{}, err
	}
	b, err := p.lookup(c.BindingKey())
	if err != nil {
		return envapi.Receipt{}, err
	}
	if err := b.begin(ctx, c.Sequence); err != nil {
		if ctx.Err() != nil {
			return envapi.Receipt{}, stoppedBefore(ctx, "a garbage collection was still removing the binding's resources")
		}
		return envapi.Receipt{}, err
	}
	defer b.end(c.Sequence)
	// A gc in another process may be removing the binding's resources:
	// the execute waits until it is done, and keeps it off them while it
	// runs.
	release, err := p.fence.share(ctx, b.key)
	if err != nil {
		return envapi.Receipt{}, stoppedBefore(ctx, "a garbage collection was still removing the binding's resources")
	}
	defer release()

	if x.Deadline.IsZero() && b.profile.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(b.profile.Timeout))
		defer cancel()
	}
	a, err := p.allocation(ctx, b)
	if err != nil {
		if ctx.Err() != nil {
			return envapi.Receipt{}, stoppedBefore(ctx, "the binding's container and volume were still being made, which goes on")
		}
		return envapi.Receipt{}, err
	}
	k := &call{p: p, c: c, x: x, b: b, a: a, ctx: ctx, tag: strconv.FormatUint(c.Sequence, 10), input: x.Input}
	defer k.done()
	if err := p.settleProfile(ctx, b, a); err != nil {
		if ctx.Err() != nil && !stopCode(err) {
			// Whatever Engine call the stop cut short (an update of
			// the container's limits, say), nothing of the command ran.
			return envapi.Receipt{}, stoppedBefore(ctx, "the binding's container was being brought to its profile")
		}
		return envapi.Receipt{}, k.classify(err)
	}
	out, err := run(k)
	if err != nil {
		return envapi.Receipt{}, k.classify(err)
	}
	return envsdk.Output(out)
}

// done ends the contexts a tool derived from the execute's.
func (k *call) done() {
	for _, cancel := range k.release {
		cancel()
	}
}

// withTimeout bounds the call's context by d, until the execute is
// answered.
func (k *call) withTimeout(d time.Duration) {
	var cancel context.CancelFunc
	k.ctx, cancel = context.WithTimeout(k.ctx, d)
	k.release = append(k.release, cancel)
}

// stopCode reports whether err is already the failure of a stop (timeout
// or cancelled).
func stopCode(err error) bool {
	var typed *envsdk.Error
	return errors.As(err, &typed) && (typed.Code == envapi.CodeTimeout || typed.Code == envapi.CodeCancelled)
}

// before answers err, the failure of what the execute did before its
// command started (why: what it was waiting for), as a stop before the
// command started when the call's context has ended: the Engine call it
// cut short says nothing more. A failure a finished check answered (an
// *envsdk.Error) is kept.
func (k *call) before(err error, why string) error {
	if k.ctx.Err() == nil {
		return err
	}
	var typed *envsdk.Error
	if errors.As(err, &typed) {
		return err
	}
	var stop *stopError
	if errors.As(err, &stop) {
		if stop.Before != "" {
			return err
		}
		s := *stop
		s.Before = why
		return &s
	}
	return &stopError{Cause: k.ctx.Err(), Before: why}
}

// classify turns an error of a tool into the failure Brain sees.
func (k *call) classify(err error) error {
	var typed *envsdk.Error
	var stop *stopError
	switch {
	case errors.As(err, &typed):
		return typed
	case errors.As(err, &stop) && stop.Before != "":
		return envsdk.KeepFirst(stoppedBefore(k.ctx, stop.Before), stop.Cleanup)
	case errors.As(err, &stop):
		return stopFailure(k.ctx, stop.Cleanup)
	case k.ctx.Err() != nil:
		return stopFailure(k.ctx, nil)
	case errors.Is(err, errLost):
		k.reportLoss(err.Error())
		return envsdk.Failf(envapi.CodeResourceLost, "%v; it is not re-created (tear the binding down)", err)
	}
	return err
}

// stopFailure answers a stopped execute: timeout when a deadline passed,
// cancelled otherwise (a cancel, or Close), with cleanup evidence kept in
// details.
func stopFailure(ctx context.Context, cleanup error) *envsdk.Error {
	first := envsdk.Fail(envapi.CodeCancelled, "the invocation was cancelled; its process group was killed")
	if errors.Is(context.Cause(ctx), errStopping) {
		first.Message = "the invocation was stopped, the provider is stopping; its process group was killed"
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		first = envsdk.Fail(envapi.CodeTimeout, "the invocation's deadline expired; its process group was killed")
	}
	if cleanup != nil {
		first.Message = strings.Replace(first.Message, "its process group was killed", "its process group could not be confirmed dead", 1)
	}
	return envsdk.KeepFirst(first, cleanup)
}

// stoppedBefore answers an execute stopped before its command started,
// while the provider waited for what it needs first (why): timeout or
// cancelled as stopFailure, saying that nothing of the command ran.
func stoppedBefore(ctx context.Context, why string) *envsdk.Error {
	f := stopFailure(ctx, nil)
	what := "the invocation was cancelled"
	switch {
	case f.Code == envapi.CodeTimeout:
		what = "the invocation's deadline expired"
	case errors.Is(context.Cause(ctx), errStopping):
		what = "the invocation was stopped, the provider is stopping,"
	}
	f.Message = what + " before its command started (" + why + "): the command never started"
	return f
}

func (k *call) reportLoss(why string) {
	if k.lost {
		return
	}
	k.lost = true
	r := k.c.Reporter()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), 10*time.Second)
	defer cancel()
	if _, err := r.Result(ctx, envapi.Observation{
		Scope: envapi.ScopeResource, Resource: k.a.Container, Code: envapi.CodeResourceLost, Message: envapi.Truncate(why),
	}, nil); err != nil {
		k.p.log.Warn("report resource loss", "binding", k.b.key, "error", err)
	}
}

// exec runs one command in the binding's container as the profile's user.
// A container found stopped (after a detach or an Engine restart, or
// stopped between the exec's creation and its start, so that the Engine
// did not start the command) is started again once and the command run
// there, and a paused one resumed (the commands an earlier provider
// process left in a container paused at start are killed first); a
// missing one is errLost.
func (k *call) exec(s execSpec, stdout, stderr io.Writer) (int, error) {
	s.User = k.b.profile.User
	s.Tag = k.tag
	if s.Dir == "" {
		s.Dir = workspaceDir
	}
	if err := k.p.settleLeftovers(k.ctx, k.b, k.a); err != nil {
		return 0, k.before(err, "what an earlier provider process left in the binding's paused container was being killed")
	}
	code, err := runExec(k.ctx, k.p.cli, k.a.Container, s, stdout, stderr)
	if errors.Is(err, errNotRunning) {
		if err := ensureRunning(k.ctx, k.p.cli, k.a); err != nil {
			return 0, k.before(err, "the Engine was starting the binding's stopped container again")
		}
		code, err = runExec(k.ctx, k.p.cli, k.a.Container, s, stdout, stderr)
	}
	if err != nil && cerrdefs.IsNotFound(err) && !errors.Is(err, errLost) {
		err = fmt.Errorf("%w: %v", errLost, err)
	}
	return code, err
}

func runCommand(k *call) (any, error) {
	var in toolset.CommandInput
	if err := toolset.Decode(k.input, &in); err != nil {
		return nil, err
	}
	dir, err := containerPath(in.Cwd)
	if err != nil {
		return nil, err
	}
	if dir != workspaceDir {
		// Checked in the container like the file tools' paths: a link
		// may lead outside, and the Engine's own refusal of a missing
		// directory would pass for the command's output.
		real, _, _, err := k.script(cwdScript, []string{dir}, nil, 64<<10)
		if err != nil {
			return nil, k.before(err, "its working directory was being checked")
		}
		dir = string(real)
	}
	env, err := k.env(in.Env)
	if err != nil {
		return nil, err
	}
	if err := checkArgSizes(in, env); err != nil {
		return nil, err
	}
	spec := execSpec{Argv: in.Args(), Env: env, Dir: dir, OutputBytes: k.b.profile.OutputBytes}
	if in.Stdin != nil {
		spec.Stdin = append([]byte{}, *in.Stdin...) // empty, not nil: stdin is closed at once
	}
	if in.TimeoutMs > 0 {
		// Kept until the execute is answered: classify reads from it
		// whether the command's own timeout stopped it.
		k.withTimeout(time.Duration(in.TimeoutMs) * time.Millisecond)
	}
	s := newStreamer(k.ctx, k.x.Invocation)
	o := capture(k.b.profile.OutputBytes, s)
	code, err := k.exec(spec, o.Stdout(), o.Stderr())
	s.flush()
	if err != nil {
		return nil, err
	}
	stdout, stderr := o.Bytes()
	return fit.Command(toolset.CommandOutput{
		ExitCode: code, Stdout: toolset.Text(stdout), Stderr: toolset.Text(stderr), Truncated: o.Truncated(),
	}, fit.Room(k.p.maxAnswer)), nil
}

// env checks the input's variables against the profile's allow-list.
func (k *call) env(vars map[string]string) ([]string, error) {
	if len(vars) == 0 {
		return nil, nil
	}
	allowed := map[string]bool{}
	for _, n := range k.b.profile.EnvAllow {
		allowed[n] = true
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !allowed[n] {
			return nil, envsdk.Failf(envapi.CodeInvalidInput, "input.env: variable %q is not allowed by the profile", n).
				WithDetails(map[string]string{"field": "input.env." + n})
		}
		if strings.ContainsRune(vars[n], 0) {
			return nil, envsdk.Failf(envapi.CodeInvalidInput, "input.env: variable %q contains a NUL byte", n)
		}
		out = append(out, n+"="+vars[n])
	}
	return out, nil
}
