package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Controller answers the controller context of the environment operation
// whose started record is seq: the services an environment's provider
// calls while it handles that operation (environments, emit, result),
// bounded by the environment's own grants. It is independent of the
// callback of a tool or agentloop the operation executes, and closed when
// the operation returns or is cancelled; a closed or unknown context
// answers ErrExecutionClosed. The Services it answers implement Closer.
func (e *Engine) Controller(id string, seq uint64) (Services, error) {
	e.mu.Lock()
	s := e.live[id]
	e.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("session %s operation %d: %w", id, seq, ErrExecutionClosed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.ctrls[seq]
	if x == nil {
		return nil, fmt.Errorf("session %s operation %d: %w", id, seq, ErrExecutionClosed)
	}
	return x, nil
}

// openControllerLocked opens the controller context of an operation of
// the environment decl (binding) whose started record is seq. b is the
// emission budget it charges (nil: a budget of its own).
func (s *sess) openControllerLocked(ctx context.Context, decl api.Environment, binding, seq uint64, b *budget) (*envapi.Grant, <-chan struct{}) {
	if b == nil {
		b = &budget{}
	}
	ref := api.EnvironmentRef{Name: decl.Name, Sequence: binding}
	x := &execution{s: s, seq: seq, ctrl: &ref, budget: b, ctx: context.WithoutCancel(ctx), done: make(chan struct{}),
		grants: decl.Environments, origin: &api.EventOrigin{Kind: api.OriginEnvironment, Environment: &ref}}
	if s.ctrls == nil {
		s.ctrls = map[uint64]*execution{}
	}
	if old := s.ctrls[seq]; old != nil {
		old.close()
	}
	s.ctrls[seq] = x
	return &envapi.Grant{Methods: envapi.ContextMethods()}, x.done
}

// closeControllerLocked revokes the controller context of operation seq.
func (s *sess) closeControllerLocked(seq uint64) {
	if x := s.ctrls[seq]; x != nil {
		x.close()
		delete(s.ctrls, seq)
	}
}

// observe commits an actionable observation {observation, content?} of the
// controller's environment, as a reporter result does.
func (x *execution) observe(ctx context.Context, raw json.RawMessage) (uint64, error) {
	var out envapi.ReporterOutput
	if err := envapi.Strict(orNullJSON(raw), &out); err != nil {
		return 0, fmt.Errorf("%w: result input: %v", ErrInvalid, err)
	}
	if err := envapi.ValidateObservation(&out.Observation); err != nil {
		return 0, fmt.Errorf("%w: result input: %v", ErrInvalid, err)
	}
	data, err := compactJSON(raw)
	if err != nil {
		return 0, err
	}
	if err := x.charge(int64(len(api.KindOutputEmitted) + len(data))); err != nil {
		return 0, err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := x.openLocked(); err != nil {
		return 0, err
	}
	return s.observeLocked(*x.ctrl, data)
}

// openLocked refuses a controller whose binding is no longer current.
func (x *execution) openLocked() error {
	s := x.s
	if s.st == nil {
		return fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	if x.ctrl == nil {
		return nil
	}
	es := s.st.Envs[x.ctrl.Name]
	if es == nil || es.Binding != x.ctrl.Sequence {
		return fmt.Errorf("%w: binding %s/%d", ErrExecutionClosed, x.ctrl.Name, x.ctrl.Sequence)
	}
	return nil
}

// observeLocked commits an actionable observation of binding as
// output_emitted with environment origin and schedules the wake-up it
// causes.
func (s *sess) observeLocked(binding api.EnvironmentRef, output json.RawMessage) (uint64, error) {
	origin, _ := json.Marshal(api.EventOrigin{Kind: api.OriginEnvironment, Environment: &binding})
	r := rec(api.KindOutputEmitted, outputEmitted{Environment: binding.Name, Output: output})
	r.Origin = origin
	// Pending observations share the emission limit: one that would take
	// them past it is refused, and nothing is appended.
	if max := s.e.cfg.Limits.MaxEmittedBytes; max > 0 {
		size := int64(len(r.Data))
		if pending := s.st.observedBytes(); pending+size > max {
			return 0, fmt.Errorf("%w: pending observations hold %d of %d bytes", ErrEmitLimit, pending, max)
		}
	}
	seq, err := s.commitLocked(r)
	if err == nil {
		s.scheduleWakeLocked()
	}
	return seq, err
}
