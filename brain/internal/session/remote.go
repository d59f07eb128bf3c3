package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// remoteLoop answers the environment a remote agentloop runs on, or ""
// when the loop runs in-process: an agentloop whose environment names a
// declared environment delivered over environment/v1 (driver "http" or a
// route, not "brain" or "host") and whose implementation is not the
// built-in loop runs as an execute on that environment.
func remoteLoop(conf *api.CreateSessionRequest) string {
	a := conf.Agentloop
	if a == nil || a.Environment == "" || isBuiltin(a.Implementation) {
		return ""
	}
	for _, env := range conf.Environments {
		if env.Name == a.Environment && env.Driver != api.DriverBrain && env.Driver != api.DriverHost {
			return env.Name
		}
	}
	return ""
}

// runRemote runs an activation as one execute on the loop's environment:
// the TurnInput is the execute's input, the agentloop methods are its
// callback grant (a fresh token per activation, revoked when the
// activation ends), the deadline is the turn's remaining time, and the
// result receipt's output is the TurnOutput {result?}. Cancelling the
// activation abandons the execute (the provider's request ends and the
// callback is revoked) and forwards a cancel to the environment
// (forwardCancel); a failure, an unknown outcome or a cancel leaves the
// activation's event batch pending.
func (s *sess) runRemote(a *activation, in api.TurnInput, name string) (api.TurnOutput, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return api.TurnOutput{}, fmt.Errorf("agentloop input: %w", err)
	}
	s.mu.Lock()
	if s.st == nil {
		s.mu.Unlock()
		return api.TurnOutput{}, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	if es := s.st.Envs[name]; es == nil || es.State != envReady {
		s.mu.Unlock()
		return api.TurnOutput{}, &TurnError{Code: api.FailureEnvironmentNotReady, Message: "agentloop environment " + name + " is not set up", Err: ErrWrongState}
	}
	var deadlineMs *int64
	if dl, ok := a.ctx.Deadline(); ok {
		ms := max(time.Until(dl).Milliseconds(), 0)
		deadlineMs = &ms
	}
	decl, binding := s.declLocked(name)
	impl := s.st.Config.Agentloop.Implementation
	op := s.operationLocked(a.ctx, decl, binding, a.seq,
		envapi.Execute(impl, input, deadlineMs, &envapi.Grant{Methods: envapi.AgentloopMethods()}), a.budget)
	op.CallbackDone, op.Execution = a.exec.done, a.exec
	s.mu.Unlock()

	receipt, err := s.e.deliver(a.ctx, op)

	s.mu.Lock()
	s.closeControllerLocked(a.seq)
	if err != nil && a.ctx.Err() == nil && !errors.Is(err, ErrInvalidReceipt) && s.st != nil {
		_, _ = s.commitLocked(rec(api.KindEnvironmentUnreachable, envUnreachable{Environment: name, Sequence: a.seq, Message: boundMessage(err.Error())}))
	}
	s.mu.Unlock()
	if err != nil {
		if a.ctx.Err() != nil {
			cause := context.Cause(a.ctx)
			s.forwardCancel(a.seq, name, cause)
			return api.TurnOutput{}, cause
		}
		return api.TurnOutput{}, &TurnError{Code: api.FailureUnknown, Message: "agentloop execute: " + err.Error(), Err: err}
	}
	switch receipt.Type {
	case envapi.ReceiptResult:
		var out api.TurnOutput
		if len(receipt.Output) > 0 && string(receipt.Output) != "null" {
			if err := envapi.Strict(receipt.Output, &out); err != nil {
				return api.TurnOutput{}, &TurnError{Code: api.FailureAgentloopFailed,
					Message: "agentloop output is not {result?}: " + err.Error(), Err: ErrInvalid}
			}
		}
		return out, nil
	case envapi.ReceiptFailure:
		code := api.FailureAgentloopFailed
		switch receipt.Code {
		case envapi.CodeCancelled, envapi.CodeTimeout:
			code = receipt.Code
		}
		return api.TurnOutput{}, &TurnError{Code: code, Message: receipt.Code + ": " + receipt.Message, Retryable: receipt.Retryable,
			Err: errors.New("agentloop execute failed")}
	case envapi.ReceiptUnknown:
		return api.TurnOutput{}, &TurnError{Code: api.FailureUnknown, Message: receipt.Message, Err: errors.New("agentloop outcome unknown")}
	case envapi.ReceiptAccepted, envapi.ReceiptProgress:
		// Dispatched, with no result: the loop may still be running, so
		// the turn's outcome is unknown rather than a failure.
		return api.TurnOutput{}, &TurnError{Code: api.FailureUnknown,
			Message: "agentloop execute answered " + string(receipt.Type) + " without a result; its outcome is unknown",
			Err:     errors.New("agentloop outcome unknown")}
	}
	return api.TurnOutput{}, &TurnError{Code: api.FailureAgentloopFailed,
		Message: "agentloop execute answered " + string(receipt.Type) + " without a result", Err: ErrInvalid}
}

// forwardCancel forwards the cancel of the remote execute started at seq
// to its environment, as a tool's cancel is forwarded: tool_cancel_started
// (target_sequence seq) is committed, then one cancel operation is sent
// in the background, bounded by Config.CancelDelivery and never resent,
// and its outcome committed. The turn does not wait for it. An execute
// stopped by its own deadline is not cancelled: the environment was given
// that deadline.
func (s *sess) forwardCancel(seq uint64, env string, cause error) {
	if errors.Is(cause, ErrTimeout) {
		return
	}
	s.mu.Lock()
	if s.st == nil || s.st.Envs[env] == nil {
		s.mu.Unlock()
		return
	}
	cancelSeq, err := s.commitLocked(rec(api.KindToolCancelStarted, toolCancelStarted{TargetSequence: seq, Environment: env}))
	if err != nil {
		s.mu.Unlock()
		return
	}
	decl, binding := s.declLocked(env)
	op := s.operationLocked(s.e.base, decl, binding, cancelSeq, envapi.Cancel(seq), nil)
	s.e.work.Add(1)
	s.inflight++
	s.mu.Unlock()
	go func() {
		defer s.e.work.Done()
		receipt, err := s.deliverCancel(op)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.endCancelLocked(op, receipt, err)
		s.inflight--
		s.maybeEvictLocked(false)
	}()
}
