package hosts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// services answers the session services of a call host id carries.
func (r *Registry) services(id, sessionID string, seq uint64) (session.Services, error) {
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
		return nil, fmt.Errorf("host %s has no open tool call %s/%d: %w", id, sessionID, seq, session.ErrExecutionClosed)
	}
	return c.svc, nil
}

// Update applies a host's ToolExecutionUpdate and answers the committed
// sequence.
func (r *Registry) Update(ctx context.Context, id string, res api.HostResult) (uint64, error) {
	u := res.Update
	switch u.Type {
	case api.UpdateResult, api.UpdateReturned, api.UpdateFinish:
	default:
		return 0, fmt.Errorf("%w: update type %q (want result, returned or finish)", session.ErrInvalid, u.Type)
	}
	svc, err := r.services(id, res.SessionID, res.Sequence)
	if err != nil {
		return 0, err
	}
	switch u.Type {
	case api.UpdateResult:
		if u.Outcome == nil {
			return 0, fmt.Errorf("%w: a result update needs an outcome", session.ErrInvalid)
		}
		return svc.Result(ctx, *u.Outcome)
	case api.UpdateReturned:
		seq, err := svc.Returned(ctx, u.Outcome)
		if err == nil {
			r.mu.Lock()
			if h := r.hosts[id]; h != nil {
				if c := h.outstanding[key{res.SessionID, res.Sequence}]; c != nil {
					c.markReturned()
				}
			}
			r.mu.Unlock()
		}
		return seq, err
	case api.UpdateFinish:
		return svc.Finish(ctx, u.Outcome)
	}
	return 0, fmt.Errorf("%w: update type %q (want result, returned or finish)", session.ErrInvalid, u.Type)
}

// Emit commits an extension event of a host's tool call.
func (r *Registry) Emit(ctx context.Context, id string, ev api.HostEvent) (uint64, error) {
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
	svc, err := r.services(id, c.SessionID, c.Sequence)
	if err != nil {
		return nil, err
	}
	in := c.Call.Input
	if in == nil {
		in = json.RawMessage("null")
	}
	return svc.Call(ctx, c.Call.Method, in)
}

// Suspend closes host id's connection named connection when it carries no
// outstanding command, and reports whether it did.
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
	// Ended under the same hold of the lock, so that no command is
	// delivered to the connection between the check and its end.
	c.endLocked()
	r.mu.Unlock()
	return true, nil
}
