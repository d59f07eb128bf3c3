package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Report types of the reporter endpoint.
const (
	ReportEvent  = "event"  // diagnostic: never wakes the loop
	ReportResult = "result" // actionable observation: wakes the loop
)

// Report is a body POSTed by an environment to its reporter grant.
type Report struct {
	Type      string          `json:"type"`
	EventType string          `json:"event_type,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	// Redact, if set, answers what Output, or the pair [EventType, Data]
	// of a diagnostic event (as a JSON array), is recorded as, given the
	// binding's operation as far as where it goes and with which
	// credential (Declaration, Authorized, Credential; see Operation): a
	// transport removes the credentials its operations carry to the
	// binding's provider, which the provider may quote in a report. The
	// credential is read from Secrets, so this holds for a reporter used
	// after a restart; when it cannot be read the report is refused
	// (ErrUnavailable).
	Redact func(op Operation, raw json.RawMessage) json.RawMessage `json:"-"`
}

// Report commits an environment's report with origin {kind:"environment",
// environment: binding} and answers its sequence. A diagnostic event is an
// extension event; an actionable result is recorded as output_emitted and
// wakes the loop (coalesced) unless the session was interrupted. A binding
// that is not the environment's current one is refused
// (ErrExecutionClosed).
//
// Once Close has begun, a session still in memory (its work is what the
// drain waits for) keeps taking reports without an admission, as its
// callbacks do: a provider reporting a resource it lost during a drained
// tool call is heard. A session not in memory is refused (ErrClosed).
func (e *Engine) Report(ctx context.Context, id string, binding api.EnvironmentRef, r Report) (uint64, error) {
	if !ValidSessionID(id) {
		return 0, fmt.Errorf("%w: malformed session id %q", ErrInvalid, id)
	}
	e.mu.Lock()
	s, closed := e.live[id], e.closed
	e.mu.Unlock()
	if s != nil && closed {
		s.mu.Lock()
		if !s.evicted && s.st != nil {
			defer s.mu.Unlock()
			seq, err := s.reportLocked(ctx, binding, r)
			s.maybeEvictLocked(false)
			return seq, err
		}
		s.mu.Unlock()
	}
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return 0, err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.reportLocked(ctx, binding, r)
}

// reportLocked commits report r of binding (see Engine.Report).
func (s *sess) reportLocked(ctx context.Context, binding api.EnvironmentRef, r Report) (uint64, error) {
	es := s.st.Envs[binding.Name]
	if es == nil || es.Binding != binding.Sequence || es.State == envDeleted || es.State == envDetached ||
		s.st.Status == api.StatusEnded || s.st.Status == api.StatusFailed {
		return 0, fmt.Errorf("%w: binding %s/%d", ErrExecutionClosed, binding.Name, binding.Sequence)
	}
	if r.Redact != nil {
		decl, _ := s.declLocked(binding.Name)
		op := s.targetLocked(ctx, decl, binding.Sequence)
		if op.credErr != nil {
			return 0, fmt.Errorf("%w: %w", ErrUnavailable, op.credErr)
		}
		switch {
		case r.EventType != "":
			// The event type is journaled too: one that quotes a secret
			// is redacted, and then refused below as no event name, as
			// an emit through a callback is.
			r.EventType, r.Data = redactEvent(op, r.Redact, r.EventType, r.Data)
		case len(r.Data) > 0:
			r.Data = r.Redact(op, r.Data)
		}
		if len(r.Output) > 0 {
			r.Output = r.Redact(op, r.Output)
		}
	}
	origin, _ := json.Marshal(api.EventOrigin{Kind: api.OriginEnvironment, Environment: &binding})
	switch r.Type {
	case ReportEvent:
		if !envapi.ValidIdentifier(r.EventType) || api.IsReserved(r.EventType) {
			return 0, fmt.Errorf("%w: %q", ErrReservedName, r.EventType)
		}
		data, err := compactJSON(r.Data)
		if err != nil {
			return 0, err
		}
		x := rec(api.KindExtensionEvent, extensionEvent{Kind: r.EventType, Payload: data})
		x.Origin = origin
		return s.commitLocked(x)
	case ReportResult:
		out, err := compactJSON(r.Output)
		if err != nil {
			return 0, err
		}
		return s.observeLocked(binding, out)
	}
	return 0, fmt.Errorf("%w: report type %q", ErrInvalid, r.Type)
}

// outputEmitted is the payload of an actionable environment report.
type outputEmitted struct {
	Environment string          `json:"environment"`
	Output      json.RawMessage `json:"output"`
}

// redactEvent answers the event type and the data of a diagnostic report
// as one call of redact leaves them: the pair is redacted as the JSON
// array [eventType, data]. An answer that is no such pair answers no event
// type, which is refused.
func redactEvent(op Operation, redact func(Operation, json.RawMessage) json.RawMessage, eventType string, data json.RawMessage) (string, json.RawMessage) {
	in := data
	if len(in) == 0 {
		in = json.RawMessage("null")
	}
	raw, err := json.Marshal([]any{eventType, in})
	if err != nil {
		return "", nil
	}
	var pair []json.RawMessage
	var out string
	if json.Unmarshal(redact(op, raw), &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &out) != nil {
		return "", nil
	}
	if len(data) == 0 {
		return out, data
	}
	return out, pair[1]
}
