package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Failure codes of tool calls a host could not take.
const (
	CodeHostNotRegistered = "host_not_registered"
	CodeHostNotConnected  = "host_not_connected"
	CodeHostOverloaded    = "host_overloaded"
	CodeUnsupported       = envapi.CodeUnsupported
)

// ErrHostLost reports that the connection carrying a command ended while
// its call was open.
var ErrHostLost = errors.New("hosts: the host's connection ended with the command outstanding")

// command is one outstanding invoke_tool.
type command struct {
	conn *Conn
	// svc is the service table of the call's execution; the host's
	// updates and service calls go through it.
	svc  session.Services
	lost chan struct{}
	once sync.Once
	// returned is closed when the host ended the call's synchronous phase.
	returned chan struct{}
	retOnce  sync.Once
	// settled is set (under the registry's lock) once no cancel operation
	// is to come for the command: the host finished the call, or the
	// cancel operation named it already. A settled command is not kept in
	// host.stopped.
	settled bool
	// grant is the call's invocation token (session.Operation's
	// CallbackDone): closed when the call's authority is revoked.
	grant <-chan struct{}
}

func (c *command) loseLocked() { c.once.Do(func() { close(c.lost) }) }

func (c *command) markReturned() { c.retOnce.Do(func() { close(c.returned) }) }

// Route answers the session.Environments that delivers operations of host
// environments to r and every other operation to next (which may be nil:
// then only host environments can be declared).
func Route(r *Registry, next session.Environments) session.Environments {
	return &router{r: r, next: next}
}

type router struct {
	r    *Registry
	next session.Environments
}

var (
	_ session.Environments       = (*router)(nil)
	_ session.Validator          = (*router)(nil)
	_ session.PlacementValidator = (*router)(nil)
	_ session.Environments       = (*Registry)(nil)
)

// ValidatePlacement accepts any placement on a host environment (the host
// runs tools by name) and asks next about every other.
func (ro *router) ValidatePlacement(env api.Environment, implementation json.RawMessage) error {
	if env.Driver == api.DriverHost {
		return nil
	}
	if v, ok := ro.next.(session.PlacementValidator); ok {
		return v.ValidatePlacement(env, implementation)
	}
	return nil
}

// Deliver runs one operation of a host environment.
func (r *Registry) Deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	switch op.Request.Type {
	case envapi.RequestSetup:
		return r.setup(op), nil
	case envapi.RequestExecute:
		return r.execute(ctx, op)
	case envapi.RequestCancel:
		return r.cancel(ctx, op), nil
	case envapi.RequestCall:
		return failure(CodeUnsupported, "host environments serve tools only, not method "+op.Request.Name, false), nil
	}
	// detach and teardown: a host holds nothing for the session.
	return accepted, nil
}

// Deliver sends a host environment's operation to the registry and any
// other to next.
func (ro *router) Deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	if op.Declaration.Driver == api.DriverHost {
		ctx, end := session.TraceOperation(ctx, ro.r.cfg.Tracer, op)
		rc, err := ro.r.Deliver(ctx, op)
		end(rc, err)
		return rc, err
	}
	if ro.next == nil {
		return envapi.Receipt{}, fmt.Errorf("environment %s: driver %q is not served by this server", op.Environment, op.Declaration.Driver)
	}
	return ro.next.Deliver(ctx, op)
}

// ValidateEnvironment checks a declaration at session create: a host
// environment must name a registered host.
func (ro *router) ValidateEnvironment(env api.Environment) error {
	if env.Driver == api.DriverHost {
		return ro.r.ValidateEnvironment(env)
	}
	if ro.next == nil {
		return fmt.Errorf("driver %q is not served by this server", env.Driver)
	}
	if v, ok := ro.next.(session.Validator); ok {
		return v.ValidateEnvironment(env)
	}
	return nil
}

// ValidateEnvironment checks that a host declaration names a registered
// host and nothing a host cannot use.
func (r *Registry) ValidateEnvironment(env api.Environment) error {
	if env.URL != "" || env.Credential != "" {
		return fmt.Errorf("driver %q takes no url or credential", api.DriverHost)
	}
	if !ValidHostID(env.HostID) || !r.Registered(env.HostID) {
		return fmt.Errorf("host_id %q names no registered host", env.HostID)
	}
	return nil
}

func failure(code, msg string, retryable bool) envapi.Receipt {
	return envapi.Receipt{Type: envapi.ReceiptFailure, Code: code, Message: msg, Retryable: retryable}
}

var accepted = envapi.Receipt{Type: envapi.ReceiptAccepted}

// setup accepts a host environment whose host is registered: the host
// connects when it likes, and a tool call finds out whether it is.
func (r *Registry) setup(op session.Operation) envapi.Receipt {
	if !r.Registered(op.Declaration.HostID) {
		return failure(CodeHostNotRegistered, "host "+op.Declaration.HostID+" is not registered", false)
	}
	return accepted
}

// execute writes the call's invoke_tool command to the host's current
// connection and waits until the call closes (the host finished it, it
// timed out or it was cancelled) or the connection ends.
func (r *Registry) execute(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	if op.Tool == "" {
		return failure(CodeUnsupported, "host environments run tools only", false), nil
	}
	cmd := api.HostCommand{
		SessionID: op.SessionID, Sequence: op.Sequence, Environment: op.Environment, Template: op.Template,
		Operation: api.HostOperation{Type: api.HostInvokeTool, Name: op.Tool, Input: op.Request.Input},
	}
	if d := op.Request.DeadlineMs; d != nil {
		at := r.cfg.Now().Add(time.Duration(*d) * time.Millisecond).UnixMilli()
		cmd.DeadlineAtMs = &at
	}
	frame, err := json.Marshal(cmd)
	if err != nil {
		return envapi.Receipt{}, fmt.Errorf("hosts: encode command: %w", err)
	}
	k := key{op.SessionID, op.Sequence}
	svc := op.Execution
	if svc == nil {
		return envapi.Receipt{}, fmt.Errorf("hosts: tool call %s/%d carries no execution: %w", op.SessionID, op.Sequence, session.ErrExecutionClosed)
	}
	r.mu.Lock()
	h := r.lookupLocked(op.Declaration.HostID)
	switch {
	case r.closed:
		r.mu.Unlock()
		return failure(CodeHostNotConnected, "the server is not serving hosts", true), nil
	case h == nil:
		r.mu.Unlock()
		return failure(CodeHostNotRegistered, "host "+op.Declaration.HostID+" is not registered", false), nil
	case h.conn == nil:
		r.mu.Unlock()
		return failure(CodeHostNotConnected, "host "+h.id+" has no commands connection; the call was not sent", true), nil
	case len(h.outstanding) >= r.cfg.MaxCommands:
		r.mu.Unlock()
		return failure(CodeHostOverloaded, fmt.Sprintf("host %s has %d outstanding commands", h.id, len(h.outstanding)), true), nil
	}
	closer, _ := svc.(session.Closer)
	c := &command{conn: h.conn, svc: svc, lost: make(chan struct{}), returned: make(chan struct{}), grant: op.CallbackDone}
	h.outstanding[k] = c
	r.mu.Unlock()
	if err := c.conn.send(ctx, frame, nil); err != nil {
		r.mu.Lock()
		delete(h.outstanding, k)
		r.mu.Unlock()
		if errors.Is(err, errConnEnded) {
			return failure(CodeHostNotConnected, "the commands connection of host "+h.id+" ended before the command was written; the call was not sent", true), nil
		}
		// Stopped (a cancel, the deadline) before the transport took
		// the command: nothing reached the host.
		return envapi.Receipt{}, err
	}
	var closed <-chan struct{}
	if closer != nil {
		closed = closer.Done()
	}
	type answer struct {
		rc  envapi.Receipt
		err error
	}
	finished := make(chan answer, 1)
	go func() {
		rc, err := r.follow(ctx, h, k, c, closed, svc)
		finished <- answer{rc, err}
	}()
	select {
	case a := <-finished:
		return a.rc, a.err
	case <-c.returned:
		// The synchronous phase is over (the host posted returned): the
		// delivery ends here as an HTTP execute's would, and follow keeps
		// the call until it closes.
		return envapi.Receipt{Type: envapi.ReceiptReturned}, nil
	}
}

// follow waits until the call closes (finished, timed out, cancelled) or
// the connection that carried it ends, and forgets the command. A call
// whose connection ended answers ErrHostLost, unless it had returned:
// then nobody waits for the delivery and the call is finished unknown
// here.
func (r *Registry) follow(ctx context.Context, h *host, k key, c *command, closed <-chan struct{}, svc session.Services) (envapi.Receipt, error) {
	var lostErr error
	ended := false
	select {
	case <-closed:
		ended = true
	case <-c.lost:
		lostErr = fmt.Errorf("host %s: tool call %d: %w", h.id, k.seq, ErrHostLost)
	case <-ctx.Done():
	}
	r.mu.Lock()
	if h.outstanding[k] == c {
		delete(h.outstanding, k)
		if ended {
			h.keepUnrecordedLocked(k, c)
		}
	}
	if ctx.Err() != nil && cancelFollows(context.Cause(ctx)) && lostErr == nil && !c.settled {
		// A cancel operation follows; it needs the connection.
		h.stopped[k] = c
	}
	r.mu.Unlock()
	if lostErr != nil {
		select {
		case <-c.returned:
			_, _ = svc.Finish(context.WithoutCancel(ctx), &api.Outcome{Status: api.OutcomeUnknown, Message: lostErr.Error()})
			return accepted, nil
		default:
		}
		return envapi.Receipt{}, lostErr
	}
	if ctx.Err() != nil {
		return envapi.Receipt{}, context.Cause(ctx)
	}
	return accepted, nil
}

// cancelFollows reports whether a call whose context ended with cause is
// sent a cancel operation: one cancelled (an interrupt, its turn
// stopping, the engine stopping), not one that reached its deadline or
// that the session let go without recording anything (its lease lost, a
// failed commit), so that nothing waits for a cancel that never comes.
func cancelFollows(cause error) bool {
	if errors.Is(cause, session.ErrTimeout) {
		return false
	}
	return errors.Is(cause, session.ErrCancelled) || errors.Is(cause, context.Canceled)
}

// settle notes that no cancel operation will name command c of host id
// and forgets it if follow kept it for one.
func (r *Registry) settle(id string, k key, c *command) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.settled = true
	if h := r.hosts[id]; h != nil && h.stopped[k] == c {
		delete(h.stopped, k)
	}
}

// cancel writes a cancel_tool command to the connection that carried the
// call. It answers accepted once the transport wrote the command,
// failure host_not_connected when the command was not sent (the
// connection ended before the transport took it, or ctx did), and
// unknown when the transport took it but its write failed or was not
// confirmed (the connection or ctx ended first): the host may or may not
// have received it.
func (r *Registry) cancel(ctx context.Context, op session.Operation) envapi.Receipt {
	target := op.Request.TargetSequence
	k := key{op.SessionID, target}
	r.mu.Lock()
	h := r.lookupLocked(op.Declaration.HostID)
	var c *command
	if h != nil {
		if c = h.stopped[k]; c != nil {
			delete(h.stopped, k)
		} else if c = h.outstanding[k]; c != nil {
			// Named before follow let the command go: follow must not
			// keep it for this cancel.
			c.settled = true
		}
		if c != nil {
			// The connection owes the host this cancel until it is
			// written: a suspend meanwhile keeps it.
			c.conn.cancelling++
			defer func() {
				r.mu.Lock()
				c.conn.cancelling--
				r.mu.Unlock()
			}()
		}
	}
	r.mu.Unlock()
	if c == nil {
		return failure(CodeHostNotConnected, fmt.Sprintf("no command of tool call %d is open on host %s: it was never written, or the connection that carried it has ended", target, op.Declaration.HostID), false)
	}
	frame, _ := json.Marshal(api.HostCommand{
		SessionID: op.SessionID, Sequence: op.Sequence, Environment: op.Environment, Template: op.Template,
		Operation: api.HostOperation{Type: api.HostCancelTool, TargetSequence: target},
	})
	wrote := make(chan error, 1)
	if err := c.conn.send(ctx, frame, wrote); err != nil {
		if errors.Is(err, errConnEnded) {
			return failure(CodeHostNotConnected, fmt.Sprintf("the connection that carried tool call %d ended before the cancel was written; it was not sent", target), false)
		}
		return failure(CodeHostNotConnected, fmt.Sprintf("the cancel of tool call %d was not written before its delivery ended (%v); it was not sent", target, err), false)
	}
	select {
	case err := <-wrote:
		if err != nil {
			return envapi.Unknown(fmt.Sprintf("writing the cancel of tool call %d to host %s failed (%v); the host may or may not have received it", target, op.Declaration.HostID, err))
		}
		return accepted
	case <-c.conn.done:
		// The transport may have been writing it when the connection
		// ended.
		select {
		case err := <-wrote:
			if err == nil {
				return accepted
			}
		default:
		}
		return envapi.Unknown(fmt.Sprintf("the connection of host %s ended while the cancel of tool call %d was being written; the host may or may not have received it", op.Declaration.HostID, target))
	case <-ctx.Done():
		return envapi.Unknown(fmt.Sprintf("the cancel of tool call %d was taken for writing to host %s, but the write was not confirmed before its delivery ended; the host may or may not have received it", target, op.Declaration.HostID))
	}
}
