package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// services answers the session services of a call host id carries.
func (r *Registry) services(id, sessionID string, seq uint64) (session.Services, error) {
	c, err := r.outstanding(id, sessionID, seq)
	if err != nil {
		return nil, err
	}
	return c.svc, nil
}

// outstanding answers the command of a call host id carries.
func (r *Registry) outstanding(id, sessionID string, seq uint64) (*command, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.lookupLocked(id)
	if h == nil {
		return nil, fmt.Errorf("host %s: %w", id, ErrUnauthorized)
	}
	if r.closed {
		return nil, ErrClosed
	}
	c, ok := h.outstanding[key{sessionID, seq}]
	if !ok {
		c, ok = h.unrecordedLocked(key{sessionID, seq})
	}
	if !ok {
		return nil, fmt.Errorf("host %s has no open tool call %s/%d: %w", id, sessionID, seq, session.ErrExecutionClosed)
	}
	return c, nil
}

// Update applies a host's ToolExecutionUpdate and answers the committed
// sequence.
func (r *Registry) Update(ctx context.Context, id string, res api.HostResult) (uint64, error) {
	return r.UpdateKeyed(ctx, id, "", res)
}

// UpdateKeyed is Update under an idempotency key (none when empty): the
// same update sent again under the same key is answered with the first's
// sequence and recorded once, even once the call closed (see once).
func (r *Registry) UpdateKeyed(ctx context.Context, id, key string, res api.HostResult) (uint64, error) {
	switch res.Update.Type {
	case api.UpdateResult, api.UpdateReturned, api.UpdateFinish:
	default:
		return 0, fmt.Errorf("%w: update type %q (want result, returned or finish)", session.ErrInvalid, res.Update.Type)
	}
	return r.once(ctx, id, res.SessionID, res.Sequence, key, res, func() (uint64, error) { return r.update(ctx, id, res) })
}

func (r *Registry) update(ctx context.Context, id string, res api.HostResult) (uint64, error) {
	u := res.Update
	c, err := r.outstanding(id, res.SessionID, res.Sequence)
	if err != nil {
		return 0, err
	}
	svc := c.svc
	switch u.Type {
	case api.UpdateResult:
		if u.Outcome == nil {
			return 0, fmt.Errorf("%w: a result update needs an outcome", session.ErrInvalid)
		}
		return svc.Result(ctx, *u.Outcome)
	case api.UpdateReturned:
		seq, err := svc.Returned(ctx, u.Outcome)
		if err == nil {
			r.updated(id, key{res.SessionID, res.Sequence}, c, envapi.MethodReturned)
		}
		return seq, err
	case api.UpdateFinish:
		seq, err := svc.Finish(ctx, u.Outcome)
		if err == nil {
			r.updated(id, key{res.SessionID, res.Sequence}, c, envapi.MethodFinish)
		}
		return seq, err
	}
	return 0, fmt.Errorf("%w: update type %q (want result, returned or finish)", session.ErrInvalid, u.Type)
}

// updated notes a returned or finish that host id's command c took,
// whether it came as an update or as a service call: a returned ends the
// delivery's wait while the command is still outstanding, and a finish
// means no cancel operation follows.
func (r *Registry) updated(id string, k key, c *command, method string) {
	switch method {
	case envapi.MethodReturned:
		r.mu.Lock()
		if h := r.hosts[id]; h != nil && h.outstanding[k] == c {
			c.markReturned()
		}
		r.mu.Unlock()
	case envapi.MethodFinish:
		r.settle(id, k, c)
	}
}

// Emit commits an extension event of a host's tool call.
func (r *Registry) Emit(ctx context.Context, id string, ev api.HostEvent) (uint64, error) {
	return r.EmitKeyed(ctx, id, "", ev)
}

// EmitKeyed is Emit under an idempotency key (none when empty): the same
// event sent again under the same key is answered with the first's
// sequence and recorded once (see once).
func (r *Registry) EmitKeyed(ctx context.Context, id, key string, ev api.HostEvent) (uint64, error) {
	return r.once(ctx, id, ev.SessionID, ev.Sequence, key, ev, func() (uint64, error) { return r.emit(ctx, id, ev) })
}

func (r *Registry) emit(ctx context.Context, id string, ev api.HostEvent) (uint64, error) {
	svc, err := r.services(id, ev.SessionID, ev.Sequence)
	if err != nil {
		return 0, err
	}
	data := ev.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	return svc.Emit(ctx, ev.EventType, data)
}

// Model calls the session's model for a host's tool call.
func (r *Registry) Model(ctx context.Context, id string, m api.HostModelCall) (api.ModelResult, error) {
	svc, err := r.services(id, m.SessionID, m.Sequence)
	if err != nil {
		return api.ModelResult{}, err
	}
	return svc.Model(ctx, m.Request)
}

// ServiceCall calls any service method granted to a host's tool call.
func (r *Registry) ServiceCall(ctx context.Context, id string, c api.HostServiceCall) (json.RawMessage, error) {
	cmd, err := r.outstanding(id, c.SessionID, c.Sequence)
	if err != nil {
		return nil, err
	}
	in := c.Call.Input
	if in == nil {
		in = json.RawMessage("null")
	}
	out, err := cmd.svc.Call(ctx, c.Call.Method, in)
	if err == nil {
		r.updated(id, key{c.SessionID, c.Sequence}, cmd, c.Call.Method)
	}
	return out, err
}

// ServiceCallKeyed is ServiceCall under an idempotency key (none when
// empty): the same call of a method that records (emit, result,
// returned, finish, ...) sent again under the same key is answered with
// the first's sequence and recorded once, even once the call closed (see
// once). A key with a method that records nothing is ErrKeyNotTaken.
func (r *Registry) ServiceCallKeyed(ctx context.Context, id, key string, c api.HostServiceCall) (json.RawMessage, error) {
	if key == "" {
		return r.ServiceCall(ctx, id, c)
	}
	if !slices.Contains(envapi.RecordingMethods(), c.Call.Method) {
		return nil, fmt.Errorf("%w (%s), not %q", ErrKeyNotTaken, strings.Join(envapi.RecordingMethods(), ", "), c.Call.Method)
	}
	seq, err := r.once(ctx, id, c.SessionID, c.Sequence, key, c, func() (uint64, error) {
		out, err := r.ServiceCall(ctx, id, c)
		if err != nil {
			return 0, err
		}
		var seq uint64
		if err := json.Unmarshal(out, &seq); err != nil {
			return 0, fmt.Errorf("hosts: %s answered %.64q, not a sequence: %w", c.Call.Method, out, err)
		}
		return seq, nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(seq)
}

// Suspend closes host id's connection named connection when it carries no
// outstanding command, nor a stopped one whose cancel_tool is still to be
// written to it or being written, and reports whether it did.
func (r *Registry) Suspend(id, connection string) (bool, error) {
	r.mu.Lock()
	h := r.lookupLocked(id)
	if h == nil {
		r.mu.Unlock()
		return false, fmt.Errorf("host %s: %w", id, ErrUnauthorized)
	}
	c := h.conn
	if c == nil || c.ID != connection {
		r.mu.Unlock()
		return false, nil
	}
	for _, cmd := range h.outstanding {
		if cmd.conn == c {
			r.mu.Unlock()
			return false, nil
		}
	}
	// A stopped call's cancel_tool is still to be written to the
	// connection that carried it, or is being written: the host is still
	// running the tool.
	if c.cancelling > 0 {
		r.mu.Unlock()
		return false, nil
	}
	for _, cmd := range h.stopped {
		if cmd.conn == c {
			r.mu.Unlock()
			return false, nil
		}
	}
	// Ended under the same hold of the lock, so that no command is
	// delivered to the connection between the check and its end.
	c.endLocked()
	r.mu.Unlock()
	return true, nil
}
