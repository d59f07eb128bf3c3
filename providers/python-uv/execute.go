package pythonuv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// DescriptorKind is the kind of the only implementation descriptor this
// provider runs:
//
//	{"kind": "python_project", "name": "<project>"}
//
// where name is a project of the operator's configuration.
const DescriptorKind = "python_project"

// Descriptor is an execute's implementation descriptor.
type Descriptor struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ExecutionFailure is the details of an execution_failed, invalid_output,
// output_limit, timeout, cancelled or cleanup_failed failure of an
// invocation.
type ExecutionFailure struct {
	Project         string `json:"project"`
	ExitCode        *int   `json:"exit_code,omitempty"`
	Signal          string `json:"signal,omitempty"`
	Stderr          string `json:"stderr"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	// Stdout is the start of an output that is not JSON (bounded).
	Stdout string `json:"stdout,omitempty"`
	// Output is the result of a module that exited leaving a process that
	// could not be killed (cleanup_failed).
	Output json.RawMessage `json:"output,omitempty"`
	// OutputLimitBytes is the cap an output_limit failure passed.
	OutputLimitBytes int64 `json:"output_limit_bytes,omitempty"`
	// Phase is "preparation" when a stop arrived while waiting for it.
	Phase     string `json:"phase,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

// stdoutExcerpt bounds the stdout quoted in invalid_output details.
const stdoutExcerpt = 1024

// Execute runs the project's module with the input as JSON on stdin and
// answers its stdout, which must be one JSON value, as the result. The
// installation is prepared first, once per directory.
//
// Once Close has begun an execute fails with unavailable; one running
// then is stopped like a cancelled one.
func (p *Provider) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx, leave, err := p.enter(c.Context())
	if err != nil {
		return envapi.Receipt{}, err
	}
	defer leave()
	s, end, err := p.begin(c.BindingKey())
	if err != nil {
		return envapi.Receipt{}, err
	}
	defer end()
	proj, err := s.lookup(x.Implementation)
	if err != nil {
		return envapi.Receipt{}, err
	}
	if !x.Invocation.Granted(envapi.MethodFinish) {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeNoCallback, "a Tool execution needs a callback grant that lists finish")
	}
	if x.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.defaultTimeout, &defaultTimeoutError{s.defaultTimeout})
		defer cancel()
	}
	start := time.Now()

	s, proj, pr, release, err := p.prepared(ctx, s, proj, func(proj project) func(PreparationEvent) { return p.emitter(ctx, c, x, proj) })
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return envapi.Receipt{}, stopFailure(ctx, &ExecutionFailure{Project: proj.name, Phase: "preparation", ElapsedMS: time.Since(start).Milliseconds()}, nil)
	case err != nil:
		return envapi.Receipt{}, err
	}
	defer release()

	if err := p.checkInstallation(c, pr, proj); err != nil {
		return envapi.Receipt{}, err
	}

	input := x.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	res, err := runProcess(ctx, procSpec{
		Path:        s.uv,
		Args:        []string{"run", "--no-sync", "--project", proj.dir, "python", "-m", proj.module},
		Dir:         proj.dir,
		Env:         s.env(),
		Stdin:       input,
		StdoutLimit: s.outputLimit,
		StderrKeep:  s.stderrLimit,
	})
	if err != nil {
		if lerr := p.checkInstallation(c, pr, proj); lerr != nil {
			return envapi.Receipt{}, lerr
		}
		return envapi.Receipt{}, envsdk.Failf(envapi.CodeExecutionFailed, "project %s: %v", proj.name, err)
	}
	if res.CleanupErr != nil {
		p.log.Warn("invocation cleanup", "project", proj.name, "session", c.SessionID, "sequence", c.Sequence, "error", res.CleanupErr)
	}
	details := &ExecutionFailure{Project: proj.name, Stderr: res.Stderr, StderrTruncated: res.StderrTruncated, Signal: res.Signal, ElapsedMS: res.Elapsed.Milliseconds()}
	if res.ExitCode >= 0 {
		code := res.ExitCode
		details.ExitCode = &code
	}
	room := evidenceRoom(p.maxAnswer, res.CleanupErr)
	fitExecution(details, room)
	switch {
	case res.Stopped:
		return envapi.Receipt{}, stopFailure(ctx, details, res.CleanupErr)
	case res.StdoutOverflow:
		details.OutputLimitBytes = s.outputLimit
		return envapi.Receipt{}, envsdk.KeepFirst(envsdk.Failf(envapi.CodeOutputLimit,
			"project %s wrote more than %d bytes to stdout; its processes were killed", proj.name, s.outputLimit).WithDetails(details), res.CleanupErr)
	case res.ExitCode != 0:
		// uv re-creates a virtual environment removed under it, so the
		// failure may be the loss's doing.
		if lerr := p.checkInstallation(c, pr, proj); lerr != nil {
			return envapi.Receipt{}, lerr
		}
		msg := "project %s exited with status %d"
		if res.Signal != "" {
			msg = "project %s was killed by a signal (status %d)"
		}
		return envapi.Receipt{}, envsdk.KeepFirst(envsdk.Failf(envapi.CodeExecutionFailed, msg, proj.name, res.ExitCode).WithDetails(details), res.CleanupErr)
	}
	out := trimJSONSpace(res.Stdout)
	if problem := outputProblem(out); problem != "" {
		details.Stdout = string(bytes.ToValidUTF8(out[:toolset.RuneCut(out, stdoutExcerpt)], []byte("\uFFFD")))
		fitExecution(details, room)
		return envapi.Receipt{}, envsdk.KeepFirst(envsdk.Failf(envapi.CodeInvalidOutput, "project %s did not write one JSON value to stdout: %s", proj.name, problem).WithDetails(details), res.CleanupErr)
	}
	if res.CleanupErr != nil {
		// A process the module left behind outlives the invocation: the
		// result is kept as evidence, not answered as though nothing ran
		// on.
		details.Output = json.RawMessage(out)
		return envapi.Receipt{}, envsdk.KeepFirst(envsdk.Failf(envapi.CodeCleanupFailed,
			"project %s answered, but a process it left behind could not be killed; its result is in details.output", proj.name).WithDetails(details), res.CleanupErr)
	}
	p.log.Debug("invocation finished", "project", proj.name, "session", c.SessionID, "sequence", c.Sequence, "elapsed", res.Elapsed)
	return envapi.Result(json.RawMessage(out)), nil
}

// prepared waits for the preparation of proj's directory and answers it
// once it succeeded, with the settings and project it prepared, holding
// its installation for the caller (see hold) until the caller calls
// release. When a reload replaced the preparation while it ran, forgot
// it before the caller could hold it, or changed the project before its
// preparation started, the wait goes on with the one that replaced it and
// the project as configured now (unsupported when it no longer is). deliver gives the progress of a project's preparation to
// the caller. The error is a *envsdk.Error, or ctx's error.
func (p *Provider) prepared(ctx context.Context, s *settings, proj project, deliver func(project) func(PreparationEvent)) (*settings, project, *preparation, func(), error) {
	for {
		pr, err := p.preparation(proj)
		if errors.Is(err, errReloaded) {
			if s, proj, err = p.current(proj.name); err != nil {
				return nil, proj, nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, proj, nil, nil, err
		}
		ended, f := pr.ready()
		if !ended {
			if f, err = pr.wait(ctx, deliver(proj)); err != nil {
				return nil, proj, nil, nil, err
			}
		}
		if f == nil {
			if release, ok := p.hold(pr); ok {
				return s, proj, pr, release, nil
			}
		} else if !pr.isSuperseded() {
			return nil, proj, nil, nil, preparationFailed(f, p.maxAnswer)
		}
		if s, proj, err = p.current(proj.name); err != nil {
			return nil, proj, nil, nil, err
		}
	}
}

// current answers the settings in force and the project name as they
// configure it, after a reload; unsupported when they no longer do.
func (p *Provider) current(name string) (*settings, project, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	proj, ok := p.s.projects[name]
	if !ok {
		return nil, project{name: name}, envsdk.Failf(envapi.CodeUnsupported, "no project %q is configured since the configuration was reloaded", name)
	}
	return p.s, proj, nil
}

// lookup resolves an implementation descriptor to a configured project;
// anything else is unsupported.
func (s *settings) lookup(raw json.RawMessage) (project, error) {
	var d Descriptor
	if err := envapi.Strict(raw, &d); err != nil {
		return project{}, envsdk.Failf(envapi.CodeUnsupported,
			"implementation must be {\"kind\":%q,\"name\":PROJECT}: %v", DescriptorKind, err)
	}
	if d.Kind != DescriptorKind {
		return project{}, envsdk.Failf(envapi.CodeUnsupported, "implementation kind %q is not supported; use %q", d.Kind, DescriptorKind)
	}
	proj, ok := s.projects[d.Name]
	if !ok {
		return project{}, envsdk.Failf(envapi.CodeUnsupported, "no project %q is configured", d.Name)
	}
	return proj, nil
}

// defaultTimeoutError is the cause of the end of an execute that carried
// no deadline and ran past the operator's default timeout.
type defaultTimeoutError struct{ after time.Duration }

func (e *defaultTimeoutError) Error() string {
	return fmt.Sprintf("the execute carried no deadline and passed the default timeout of %s (default_timeout_ms)", e.after)
}

// stopFailure answers an invocation stopped by its deadline or the default
// timeout (timeout) or by cancellation (cancelled), keeping cleanup
// evidence.
func stopFailure(ctx context.Context, details *ExecutionFailure, cleanup error) *envsdk.Error {
	e := envsdk.Failf(envapi.CodeCancelled, "project %s was cancelled; its processes were killed", details.Project)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e = envsdk.Failf(envapi.CodeTimeout, "project %s passed its deadline; its processes were killed", details.Project)
		if dt, ok := errors.AsType[*defaultTimeoutError](context.Cause(ctx)); ok {
			e.Message = fmt.Sprintf("project %s: %v; its processes were killed", details.Project, dt)
		}
	}
	if details.Phase == "preparation" {
		e.Message = "stopped while the installation was being prepared (the preparation goes on for other callers)"
		if dt, ok := errors.AsType[*defaultTimeoutError](context.Cause(ctx)); ok && e.Code == envapi.CodeTimeout {
			e.Message = fmt.Sprintf("%v while the installation was being prepared (the preparation goes on for other callers)", dt)
		}
	}
	return envsdk.KeepFirst(e.WithDetails(details), cleanup)
}

// emitter reports preparation progress through the invocation's emit
// grant, when it has one. A failed emission is logged, never fatal.
func (p *Provider) emitter(ctx context.Context, c *envsdk.Ctx, x *envsdk.Execution, proj project) func(PreparationEvent) {
	granted := x.Invocation.Granted(envapi.MethodEmit)
	return func(ev PreparationEvent) {
		if !granted {
			return
		}
		if _, err := x.Invocation.Emit(ctx, PreparationEventType, ev); err != nil {
			p.log.Warn("preparation progress not emitted", "project", proj.name, "session", c.SessionID,
				"sequence", c.Sequence, "error", err)
		}
	}
}

// checkInstallation answers resource_lost when the prepared installation
// (the project directory or its virtual environment) was removed or
// replaced since it was prepared, and reports the loss once to each
// binding that meets it, as a resource observation. The loss is final: the
// installation is not prepared again (which would silently replace it)
// until the operator changes the project's configuration (Reload) or
// restarts the provider.
func (p *Provider) checkInstallation(c *envsdk.Ctx, pr *preparation, proj project) error {
	why, tell := pr.checkLost(c.BindingKey())
	if why == "" {
		return nil
	}
	if tell {
		p.log.Error("installation lost; it is not prepared again until the configuration of this project changes",
			"project", proj.name, "directory", proj.dir, "reason", why)
		if r := c.Reporter(); r != nil {
			p.reportLoss(r, proj, why, c.SessionID)
		}
	}
	return envsdk.Failf(envapi.CodeResourceLost,
		"the installation of project %s was lost: %s; it is not prepared again until the operator changes the configuration or restarts the provider",
		proj.name, why).WithDetails(map[string]string{"project": proj.name, "reason": why})
}

// reportTimeout bounds one report to the binding's reporter.
const reportTimeout = 10 * time.Second

// reportLoss tells Brain through the binding's reporter r that proj's
// installation was lost (why), in the background: a Brain slow to take
// the report does not hold the execute's answer, which says the loss,
// past its deadline. The report is bounded by reportTimeout; Close stops
// it and waits for it.
func (p *Provider) reportLoss(r *envsdk.Reporter, proj project, why, session string) {
	ctx, leave, err := p.enter(context.Background())
	if err != nil {
		p.log.Warn("installation loss not reported: the provider is stopping", "project", proj.name, "session", session)
		return
	}
	go func() {
		defer leave()
		ctx, cancel := context.WithTimeout(ctx, reportTimeout)
		defer cancel()
		_, err := r.Result(ctx, envapi.Observation{
			Scope: envapi.ScopeResource, Resource: "python_project:" + proj.name,
			Code: envapi.CodeResourceLost, Message: envapi.Truncate("the installation of project " + proj.name + " was lost: " + why),
		}, nil)
		if err != nil {
			p.log.Warn("installation loss not reported", "project", proj.name, "session", session, "error", err)
		}
	}()
}
