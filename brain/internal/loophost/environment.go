package loophost

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Environments is the built-in "brain" environment in front of the
// engine's other environments (Next). It runs every execute of a
// brain_component Tool placed on a brain environment in a fresh instance
// of its admitted module, answers cancels of those executes itself, and
// passes every other operation to Next.
//
// A brain environment whose configuration names no route and that Next
// does not route by default is the built-in environment alone: its
// setup, detach and teardown succeed without a provider and it runs only
// brain_component Tools. A brain environment
// that Next routes to an operator's provider keeps that route for its
// lifecycle and its other Tools.
//
// At session create (session.PlacementValidator) a Wasm implementation on
// any other driver, an opaque implementation on a brain environment
// without a route, a module that is not an admitted Tool and a grant the
// operator does not allow are refused; nothing falls back to another
// target.
type Environments struct {
	host *Host
	next session.Environments
}

var (
	_ session.Environments       = (*Environments)(nil)
	_ session.Validator          = (*Environments)(nil)
	_ session.PlacementValidator = (*Environments)(nil)
)

// Environments answers the built-in environment in front of next (nil:
// only the built-in environment). A Tool reaches its services through
// the operation's Execution.
func (h *Host) Environments(next session.Environments) *Environments {
	return &Environments{host: h, next: next}
}

// routed reports whether Next delivers the operations of env.
func (e *Environments) routed(env brainapi.Environment) bool {
	if e.next == nil {
		return false
	}
	if v, ok := e.next.(session.Validator); ok {
		return v.ValidateEnvironment(env) == nil
	}
	return true
}

// builtinOnly reports whether env is the built-in environment alone: a
// brain environment whose configuration names no route ("driver") and
// that Next does not route by default.
func (e *Environments) builtinOnly(env brainapi.Environment) bool {
	if env.Driver != brainapi.DriverBrain {
		return false
	}
	var conf struct {
		Driver string `json:"driver"`
	}
	if len(env.Configuration) > 0 && json.Unmarshal(env.Configuration, &conf) == nil && conf.Driver != "" {
		return false
	}
	return !e.routed(env)
}

// ValidateEnvironment accepts a brain environment without a route (the
// built-in environment) and asks Next about every other.
func (e *Environments) ValidateEnvironment(env brainapi.Environment) error {
	if e.builtinOnly(env) {
		return nil
	}
	if e.next == nil {
		return fmt.Errorf("driver %q is not available (only %q is)", env.Driver, brainapi.DriverBrain)
	}
	if v, ok := e.next.(session.Validator); ok {
		return v.ValidateEnvironment(env)
	}
	return nil
}

// ValidatePlacement checks that a Tool can run where it is placed.
func (e *Environments) ValidatePlacement(env brainapi.Environment, impl json.RawMessage) error {
	if IsComponent(impl) {
		if env.Driver != brainapi.DriverBrain {
			return fmt.Errorf("a %s implementation runs only on a %q environment, not on driver %q", ImplementationComponent, brainapi.DriverBrain, env.Driver)
		}
		_, err := e.host.ParseToolImplementation(impl)
		return err
	}
	if e.builtinOnly(env) {
		return fmt.Errorf("the built-in environment runs only %s Tools, and no provider is routed for this %q environment", ImplementationComponent, brainapi.DriverBrain)
	}
	return nil
}

func (e *Environments) local(op session.Operation) bool { return e.builtinOnly(op.Declaration) }

// Deliver runs a brain_component execute in a fresh instance, answers a
// cancel of one of them, answers the lifecycle and calls of the built-in
// environment alone, and passes every other operation to Next. The
// operations it answers itself are traced here; Next traces its own.
func (e *Environments) Deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	if e.host.opts.Tracer == nil || !e.answersItself(op) {
		return e.deliver(ctx, op)
	}
	ctx, end := session.TraceOperation(ctx, e.host.opts.Tracer, op)
	rc, err := e.deliver(ctx, op)
	end(rc, err)
	return rc, err
}

// answersItself reports whether Deliver answers op without Next.
func (e *Environments) answersItself(op session.Operation) bool {
	if e.local(op) || e.next == nil {
		return true
	}
	return op.Request.Type == envapi.RequestExecute && op.Declaration.Driver == brainapi.DriverBrain && IsComponent(op.Request.Implementation)
}

func (e *Environments) deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	local := e.local(op) || e.next == nil
	switch op.Request.Type {
	case envapi.RequestExecute:
		if op.Declaration.Driver == brainapi.DriverBrain && IsComponent(op.Request.Implementation) {
			return e.execute(ctx, op), nil
		}
		if local {
			return envapi.Failure(envapi.CodeUnsupported, "the built-in environment runs only "+ImplementationComponent+" Tools", false, nil), nil
		}
	case envapi.RequestCancel:
		if op.Declaration.Driver == brainapi.DriverBrain {
			k := invocationKey{session: op.SessionID, seq: op.Request.TargetSequence}
			if e.host.invokes.cancel(k, fmt.Errorf("cancelled by operation %d: %w", op.Sequence, session.ErrCancelled)) {
				return envapi.Result(json.RawMessage("null")), nil
			}
		}
		if local {
			return envapi.Result(json.RawMessage("null")), nil
		}
	case envapi.RequestCall:
		if local {
			return envapi.Failure(envapi.CodeUnsupported, "the built-in environment has no method "+op.Request.Name, false, nil), nil
		}
	default: // setup, detach, teardown
		if local {
			return envapi.Result(json.RawMessage("null")), nil
		}
	}
	return e.next.Deliver(ctx, op)
}

// execute runs a brain_component Tool in a fresh instance.
func (e *Environments) execute(ctx context.Context, op session.Operation) envapi.Receipt {
	// The execute is cancellable, and its deadline runs, from the start:
	// finding its module may wait for an admission or a fetch from the
	// cluster's store.
	var deadline time.Time
	if ms := op.Request.DeadlineMs; ms != nil {
		deadline = time.Now().Add(time.Duration(*ms) * time.Millisecond)
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, deadline, errDeadline)
		defer stop()
	}
	k := invocationKey{session: op.SessionID, seq: op.Sequence}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.host.invokes.start(k, cancel)
	defer e.host.invokes.end(k)
	impl, err := e.host.parseToolImplementation(ctx, op.Request.Implementation)
	if err != nil {
		return moduleFailure(ctx, impl.ID, err)
	}
	var svc ToolServices
	if op.Execution != nil {
		svc = op.Execution
	}
	return e.host.RunTool(ctx, ToolCall{
		ID: impl.ID, Input: op.Request.Input, Configuration: op.Configuration,
		Deadline: deadline, Grants: impl.Grants, Services: svc,
	})
}
