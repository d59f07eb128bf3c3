package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// unavailable answers the error of a create whose agentloop or Tool
// placement (what) could not be resolved (err) for a condition of the
// server, not of the request: the resolver's retryable TurnError (its host
// is closed or busy, say), durable storage that failed (ErrUnavailable) or
// a store that turned the read away (journal.ErrOverloaded). Nothing was
// done, and the same request may be sent again. It answers nil when the
// request is at fault: it names a module that does not exist or cannot
// run.
func unavailable(what string, err error) error {
	var te *TurnError
	switch {
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, journal.ErrOverloaded):
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	case errors.As(err, &te) && te.Retryable:
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// normalize validates a create request and fills its defaults. A
// resolution of its agentloop that waits ends with ctx.
func (e *Engine) normalize(ctx context.Context, req api.CreateSessionRequest) (api.CreateSessionRequest, error) {
	bad := func(format string, a ...any) (api.CreateSessionRequest, error) {
		return req, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	if req.Model.Provider == "" || req.Model.Name == "" || strings.ContainsAny(req.Model.Name, " \t\r\n") {
		return bad("model needs a provider and a name without whitespace")
	}
	if err := e.checkModel(req); err != nil {
		return bad("%w", err) // the model package names itself
	}
	if req.Agentloop == nil {
		req.Agentloop = &api.Agentloop{}
	}
	if len(req.Agentloop.Implementation) == 0 {
		req.Agentloop.Implementation = slices.Clone(builtinImplementation)
	}
	// A remote loop's implementation is opaque to Brain; any other is
	// resolved now.
	if remoteLoop(&req) == "" {
		if _, err := e.loop(ctx, req.Agentloop); err != nil {
			if err := unavailable("agentloop", err); err != nil {
				return req, err
			}
			if ctx.Err() != nil {
				// The caller gave up while the loop was resolved: the
				// request is not at fault.
				return req, fmt.Errorf("agentloop: %w", err)
			}
			return bad("agentloop: %v", err)
		}
		// The built-in loop's configuration is known: one it would refuse
		// on every turn is refused now. Other loops' configurations are
		// theirs to read.
		if isBuiltin(req.Agentloop.Implementation) {
			if _, err := agentloop.ParseConfiguration(req.Agentloop.Configuration); err != nil {
				var ce *agentloop.ConfigurationError
				if errors.As(err, &ce) {
					return bad("agentloop.configuration: %s", ce.Reason)
				}
				return bad("agentloop.configuration: %v", err)
			}
		}
		// A loop that runs in Brain's process placed on a host
		// environment (which runs Tools only) is refused: it is not run
		// here in the host's place.
		for _, env := range req.Environments {
			if env.Name == req.Agentloop.Environment && env.Driver == api.DriverHost {
				return bad("agentloop: environment %q has driver %q, which runs Tools, not agentloops", env.Name, env.Driver)
			}
		}
	}
	if req.Tools == nil {
		req.Tools = []api.Tool{}
	}
	if req.Environments == nil {
		req.Environments = []api.Environment{}
	}
	envs := map[string]bool{}
	for _, env := range req.Environments {
		if !envapi.ValidIdentifier(env.Name) || envs[env.Name] {
			return bad("environment name %q is invalid or repeated", env.Name)
		}
		if env.Lifecycle != "" && env.Lifecycle != api.LifecycleAutomatic && env.Lifecycle != api.LifecycleManual {
			return bad("environment %q: lifecycle %q", env.Name, env.Lifecycle)
		}
		if t := env.Template; t != nil {
			if t.MaxInstances < 1 {
				return bad("environment %q: template.max_instances must be at least 1", env.Name)
			}
			schema, err := e.schemas.get(t.ConfigurationSchema)
			if err != nil {
				return bad("environment %q: template.configuration_schema: %v", env.Name, err)
			}
			// The template's own binding is its first instance: a
			// configuration it declares is held to the schema as every
			// other instance's is.
			if len(env.Configuration) > 0 {
				if err := schema.Validate(env.Configuration); err != nil {
					return bad("environment %q: configuration does not match its template.configuration_schema: %v", env.Name, err)
				}
			}
		}
		for name, m := range env.Methods {
			if !envapi.ValidIdentifier(name) {
				return bad("environment %q: method name %q", env.Name, name)
			}
			if m.Effect != "" && m.Effect != "none" && m.Effect != "replace" {
				return bad("environment %q: method %q: effect %q", env.Name, name, m.Effect)
			}
			for _, raw := range []json.RawMessage{m.InputSchema, m.OutputSchema} {
				if _, err := e.schemas.get(raw); err != nil {
					return bad("environment %q: method %q: %v", env.Name, name, err)
				}
			}
		}
		envs[env.Name] = true
	}
	if len(envs) > 0 && e.cfg.Environments == nil {
		return bad("environments are not available")
	}
	if v, ok := e.cfg.Environments.(Validator); ok {
		for _, env := range req.Environments {
			if err := v.ValidateEnvironment(env); err != nil {
				return bad("environment %q: %v", env.Name, err)
			}
		}
	}
	tools := map[string]bool{}
	for _, t := range req.Tools {
		if !envapi.ValidIdentifier(t.Name) || tools[t.Name] {
			return bad("tool name %q is invalid or repeated", t.Name)
		}
		tools[t.Name] = true
		if len(t.Placements) == 0 {
			return bad("tool %q has no placement", t.Name)
		}
		for _, raw := range []json.RawMessage{t.InputSchema, t.OutputSchema} {
			if _, err := e.schemas.get(raw); err != nil {
				return bad("tool %q: %v", t.Name, err)
			}
		}
		for env := range t.Placements {
			if !envs[env] {
				return bad("tool %q is placed on undeclared environment %q", t.Name, env)
			}
		}
		if v, ok := e.cfg.Environments.(PlacementValidator); ok {
			for _, env := range req.Environments {
				if p, ok := t.Placements[env.Name]; ok {
					if err := v.ValidatePlacement(env, p.Implementation); err != nil {
						if err := unavailable(fmt.Sprintf("tool %q on environment %q", t.Name, env.Name), err); err != nil {
							return req, err
						}
						return bad("tool %q on environment %q: %v", t.Name, env.Name, err)
					}
				}
			}
		}
	}
	if req.IdleTTLMs != nil && *req.IdleTTLMs < 0 {
		return bad("idle_ttl_ms must not be negative")
	}
	return req, nil
}

// checkModel refuses a model the session could never call: a provider no
// client opens for, a key no request can carry, or a system prompt, tools
// or response_format the provider's dialect cannot carry (as a loop's
// model call offers them by default). Opening a client sends nothing.
func (e *Engine) checkModel(req api.CreateSessionRequest) error {
	c, err := e.models.Open(model.Spec{Provider: req.Model.Provider, Name: req.Model.Name, APIKey: req.Model.APIKey})
	if err != nil {
		return err
	}
	system := req.System
	defaults := model.Request{System: &system, ResponseFormat: req.ResponseFormat}
	for _, t := range req.Tools {
		defaults.Tools = append(defaults.Tools, api.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	return model.Check(c, defaults)
}

// Create creates a session: it records the configuration (secrets removed)
// at sequence 1, seeds the transcript, sets every automatic environment up
// and records session_creation_ended, or session_creation_failed when a
// setup fails. id may be empty (a fresh id is chosen).
func (e *Engine) Create(ctx context.Context, id string, req api.CreateSessionRequest) (api.SessionSummary, error) {
	req, err := e.normalize(ctx, req)
	if err != nil {
		return api.SessionSummary{}, err
	}
	if id == "" {
		id = NewSessionID()
	}
	if !ValidSessionID(id) {
		return api.SessionSummary{}, fmt.Errorf("%w: malformed session id %q", ErrInvalid, id)
	}
	var epoch int64
	for {
		if epoch, err = e.own(ctx, id); err != nil {
			return api.SessionSummary{}, err
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return api.SessionSummary{}, ErrClosed
		}
		if o := e.live[id]; o != nil {
			loading := o.loading.Load()
			e.mu.Unlock()
			if loading {
				// A write looks the session up: it exists if the write
				// finds it. One that does not gives the lease back (the
				// same lease as this creation's), so it is taken again.
				o.mu.Lock()
				absent := o.evicted || o.loadErr != nil
				o.mu.Unlock()
				if absent {
					continue
				}
			}
			return api.SessionSummary{}, fmt.Errorf("%w: session %s exists", ErrWrongState, id)
		}
		if e.holds(id, epoch) {
			break
		}
		// Given back since it was taken, by a write that found no such
		// session: taken again.
		e.mu.Unlock()
	}
	st := newState()
	st.lookup = e.journalLookup(id)
	s := &sess{e: e, id: id, epoch: epoch, st: st, activated: true, tools: map[uint64]*toolCall{}, execs: map[uint64]*execution{}, waiters: map[uint64]chan turnResult{}}
	s.refs.Add(1)
	s.mu.Lock()
	e.live[id] = s
	e.released.drop(id)
	e.mu.Unlock()
	defer func() {
		s.refs.Add(-1)
		s.maybeEvictLocked(false)
		s.mu.Unlock()
	}()
	if next, err := e.store.Next(ctx, id); err == nil && next > 1 {
		s.evicted = true
		e.mu.Lock()
		delete(e.live, id)
		s.releaseLeaseLocked()
		e.mu.Unlock()
		return api.SessionSummary{}, fmt.Errorf("%w: session %s exists", ErrWrongState, id)
	}

	// abandon forgets a session of which nothing is durable: its secrets
	// (under the lease still held: a fenced store refuses them without)
	// and its place among the live sessions.
	abandon := func() {
		_ = e.secrets.DeleteAll(context.WithoutCancel(ctx), id)
		s.evicted = true
		e.mu.Lock()
		delete(e.live, id)
		// Nothing of the session is left for a failure to explain.
		delete(e.faults, id)
		s.releaseLeaseLocked()
		e.mu.Unlock()
	}
	// Secrets leave the configuration before it is journalled. A secret
	// that cannot be sealed leaves none of those sealed before it.
	if req.Model.APIKey != "" {
		if err := e.secrets.Put(ctx, id, SecretModelAPIKey, []byte(req.Model.APIKey)); err != nil {
			abandon()
			return api.SessionSummary{}, fmt.Errorf("session %s: store model key: %w", id, err)
		}
	}
	conf := req
	conf.Model.APIKey = ""
	conf.Transcript = nil
	// Omitted lists are recorded as [] (never null).
	conf.Environments = append(make([]api.Environment, 0, len(req.Environments)), req.Environments...)
	if conf.Tools == nil {
		conf.Tools = []api.Tool{}
	}
	for i, env := range conf.Environments {
		if env.Credential != "" {
			if err := e.secrets.Put(ctx, id, SecretEnvironmentCredential(env.Name), []byte(env.Credential)); err != nil {
				abandon()
				return api.SessionSummary{}, fmt.Errorf("session %s: store credential: %w", id, err)
			}
			conf.Environments[i].Credential = ""
		}
	}
	recs := []journal.Record{rec(api.KindSessionCreationStarted, conf)}
	if len(req.Transcript) > 0 {
		recs = append(recs, rec(api.KindTranscriptDelta, delta(nil, req.Transcript)))
	}
	if _, err := s.commitLocked(recs...); err != nil {
		forget := refused(err) && !errors.Is(err, journal.ErrConflict)
		if forget {
			// Nothing of the session is durable.
			abandon()
		} else {
			s.evicted = true
			e.mu.Lock()
			delete(e.live, id)
			s.releaseLeaseLocked()
			e.mu.Unlock()
		}
		if errors.Is(err, journal.ErrConflict) {
			return api.SessionSummary{}, fmt.Errorf("%w: session %s exists", ErrWrongState, id)
		}
		if forget {
			return api.SessionSummary{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return api.SessionSummary{}, err
	}

	failure := ""
	for _, env := range conf.Environments {
		if env.Lifecycle == api.LifecycleManual {
			continue
		}
		if ok, _ := s.envOpLocked(ctx, env.Name, envapi.Setup(env.Configuration), nil); !ok {
			failure = env.Name
			break
		}
	}
	// A setup that ended without its end written is closed before the
	// creation ends, as a reload of the creating session would close it.
	err = s.closeUnendedLocked()
	switch {
	case err != nil:
	case failure != "":
		_, err = s.commitLocked(failed(api.KindSessionCreationFailed, api.Failure{
			Code: api.FailureEnvironmentPreparationFailed, Message: "environment " + failure + " could not be set up",
		}))
	default:
		_, err = s.commitLocked(rec(api.KindSessionCreationEnded, ref{Sequence: 1}))
	}
	if err != nil {
		// The journal holds the session creating, which nothing in memory
		// would ever end: it goes now, and its reload fails the creation
		// with the fault.
		s.faulted = true
		return api.SessionSummary{}, err
	}
	// Actionable observations reported while the environments were set
	// up wake the loop now that the session is idle.
	s.scheduleWakeLocked()
	return s.summaryLocked(), nil
}

// envOpLocked runs one journaled environment operation: it commits the
// *_started record, delivers the request with the session lock released,
// and commits *_ended or *_failed (plus environment_unreachable on a
// transport failure). It answers whether the operation ended well and the
// receipt. prefix is derived from the request type.
func (s *sess) envOpLocked(ctx context.Context, name string, req envapi.Request, grant *envapi.Grant) (bool, envapi.Receipt) {
	r, _, err := s.envOpErrLocked(ctx, name, req)
	if err != nil {
		return false, envapi.Receipt{}
	}
	return r.Type != envapi.ReceiptFailure && r.Type != envapi.ReceiptUnknown, r
}

// envOpErrLocked is envOpLocked answering the receipt, the started
// sequence and the error that prevented a receipt. onEnded are committed
// in the one append of the *_ended record, when the operation ends well.
func (s *sess) envOpErrLocked(ctx context.Context, name string, req envapi.Request, onEnded ...journal.Record) (envapi.Receipt, uint64, error) {
	decl, binding := s.declLocked(name)
	prefix := map[envapi.RequestType]string{
		envapi.RequestSetup: "environment_setup", envapi.RequestDetach: "environment_detach",
		envapi.RequestTeardown: "environment_teardown", envapi.RequestCall: "environment_call",
	}[req.Type]
	ref := api.EnvironmentRef{Name: name, Sequence: binding}
	seq, err := s.commitLocked(rec(prefix+"_started", envStarted{Environment: name, Binding: ref, Request: req}))
	if err != nil {
		return envapi.Receipt{}, 0, err
	}
	op := s.operationLocked(ctx, decl, binding, seq, req, nil)
	s.envBusyLocked()
	s.mu.Unlock()
	receipt, derr := s.e.deliver(context.WithoutCancel(ctx), op)
	s.mu.Lock()
	s.envDoneLocked()
	s.closeControllerLocked(seq)
	if derr != nil {
		f := failed(prefix+"_failed", api.Failure{Code: api.FailureUnknown, Message: derr.Error(), Ambiguous: true, Sequence: seq})
		if errors.Is(derr, ErrInvalidReceipt) {
			_ = s.endOpLocked(f)
		} else {
			_ = s.endOpLocked(rec(api.KindEnvironmentUnreachable, envUnreachable{Environment: name, Sequence: seq, Message: boundMessage(derr.Error())}), f)
		}
		return envapi.Receipt{}, seq, derr
	}
	var end []journal.Record
	switch receipt.Type {
	case envapi.ReceiptFailure:
		end = append(end, failed(prefix+"_failed", api.Failure{
			Code: receipt.Code, Message: receipt.Message, Retryable: receipt.Retryable, Details: receipt.Details, Sequence: seq,
		}))
	case envapi.ReceiptUnknown:
		end = append(end, failed(prefix+"_failed", api.Failure{
			Code: api.FailureUnknown, Message: receipt.Message, Ambiguous: true, Sequence: seq,
		}))
	default:
		end = append([]journal.Record{rec(prefix+"_ended", envEnded{Sequence: seq, Receipt: receipt})}, onEnded...)
	}
	if err := s.endOpLocked(end...); err != nil {
		// The operation's outcome is not durable: nobody is answered
		// it, and the reload closes it as failed with the fault.
		return envapi.Receipt{}, seq, &endError{err: err}
	}
	return receipt, seq, nil
}

// endError is the failure to commit the terminal record of an operation
// the environment answered.
type endError struct{ err error }

func (e *endError) Error() string { return e.err.Error() }
func (e *endError) Unwrap() error { return e.err }

// operationError answers the error a caller of an environment operation
// sees for err, the error that left the operation without a receipt: the
// journal's own error when the operation's end could not be committed;
// when its start could not be (seq 0), that error, as unavailable when
// the store refused it (nothing was sent: the request may be sent again);
// else an unknown outcome of operation seq.
func operationError(err error, seq uint64) error {
	if ee := (*endError)(nil); errors.As(err, &ee) {
		return ee.err
	}
	if seq == 0 {
		if refused(err) {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	return &EnvironmentError{Code: api.FailureUnknown, Message: boundMessage(err.Error()), Sequence: seq}
}

// endOpLocked commits the terminal records of an operation that was
// delivered. When they cannot be written, the operation stays open in
// memory only: the session is marked faulted, so that it goes once
// nothing runs and its reload closes the operation from the journal.
func (s *sess) endOpLocked(recs ...journal.Record) error {
	_, err := s.commitLocked(recs...)
	if err != nil {
		s.faulted = true
		s.noteUnendedLocked(recs)
	}
	return err
}

// noteUnendedLocked remembers the operations whose terminal records recs
// carried in a commit that failed.
func (s *sess) noteUnendedLocked(recs []journal.Record) {
	for _, r := range recs {
		prefix, ok := strings.CutSuffix(r.Kind, "_ended")
		if !ok {
			prefix, ok = strings.CutSuffix(r.Kind, "_failed")
		}
		if !ok || !isEffect(prefix) {
			continue
		}
		var p struct {
			Sequence uint64 `json:"sequence"`
		}
		if json.Unmarshal(r.Data, &p) != nil || p.Sequence == 0 {
			continue
		}
		if s.unended == nil {
			s.unended = map[uint64]string{}
		}
		s.unended[p.Sequence] = prefix
	}
}

// unendedActivationLocked remembers activation a, and its turn, whose
// end could not be written: in memory nothing runs them any more, while
// the session's state still holds them open.
func (s *sess) unendedActivationLocked(a *activation) {
	if s.unended == nil {
		s.unended = map[uint64]string{}
	}
	s.unended[a.seq] = "activation"
	if a.turn != 0 {
		s.unended[a.turn] = "turn"
	}
}

// closeUnendedLocked commits, for each operation, activation and turn
// whose end could not be written and that the session still holds open,
// the ambiguous failure a reload from the journal would commit
// (recoverLocked), so that a fault that passed does not keep the session
// busy while other work of it runs on. A write admitted to a faulted
// session still in memory runs it first, and so does an automatic
// activation before it starts. When it cannot be written, everything is
// kept for the next one.
func (s *sess) closeUnendedLocked() error {
	if len(s.unended) == 0 || s.st == nil {
		return nil
	}
	why := s.e.fault(s.id, false)
	if why == "" {
		why = "its end could not be written"
	}
	seqs := make([]uint64, 0, len(s.unended))
	for seq, prefix := range s.unended {
		if _, open := s.st.Open[seq]; open && prefix != "activation" && prefix != "turn" {
			seqs = append(seqs, seq)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	recs := make([]journal.Record, 0, len(seqs)+3)
	interrupts := false
	for _, seq := range seqs {
		recs = append(recs, failed(s.unended[seq]+"_failed", api.Failure{
			Code: api.FailureInterrupted, Message: why, Ambiguous: true, Sequence: seq,
		}))
		// A tool call whose end was lost interrupted the loop's work, as
		// on a reload; unless an activation runs now: the loop is at
		// work, and its later wake-ups are not held back.
		interrupts = interrupts || s.unended[seq] == "tool_call" && s.act == nil
	}
	if seq := s.st.Activation; seq != 0 && s.unended[seq] == "activation" && s.act == nil {
		recs = append(recs, failed(api.KindActivationFailed, api.Failure{
			Code: api.FailureInterrupted, Message: why, Ambiguous: true, Sequence: seq,
		}))
		interrupts = true
	}
	if seq := s.st.Turn; seq != 0 && s.unended[seq] == "turn" && s.act == nil {
		recs = append(recs, failed(api.KindTurnFailed, api.Failure{
			Code: api.FailureInterrupted, Message: why, Ambiguous: true, Sequence: seq,
		}))
		interrupts = true
	}
	if interrupts && !s.st.Interrupted && s.st.Status != api.StatusCreating && s.st.Status != api.StatusEnding {
		// As on a reload: what interrupted the loop's work stops
		// automatic activations until the next explicit message (a
		// session being created or ending has none).
		recs = append([]journal.Record{rec(kindSessionInterrupted, struct{}{})}, recs...)
	}
	if len(recs) > 0 {
		if _, err := s.commitLocked(recs...); err != nil {
			return err
		}
	}
	s.unended = nil
	return nil
}

// envBusyLocked counts an environment operation delivered outside the
// lock; envDoneLocked ends it.
func (s *sess) envBusyLocked() {
	if s.envBusy == 0 {
		s.envIdle = make(chan struct{})
	}
	s.envBusy++
}

func (s *sess) envDoneLocked() {
	s.envBusy--
	if s.envBusy == 0 {
		close(s.envIdle)
	}
}

// declLocked returns an environment's current declaration (an instance's
// own, with any updated configuration) and binding sequence.
func (s *sess) declLocked(name string) (api.Environment, uint64) {
	es := s.st.Envs[name]
	var decl *api.Environment
	if es != nil && es.Decl != nil {
		decl = es.Decl
	} else {
		for i := range s.st.Config.Environments {
			if s.st.Config.Environments[i].Name == name {
				decl = &s.st.Config.Environments[i]
			}
		}
	}
	if decl == nil {
		return api.Environment{Name: name}, 1
	}
	env, binding := *decl, uint64(1)
	if es != nil {
		binding = es.Binding
		if es.Configuration != nil {
			env.Configuration = es.Configuration
		}
	}
	return env, binding
}

// operationLocked builds the operation delivered for a started record and
// opens its controller context (charging b, or a budget of its own); the
// caller closes the context when the operation returns or is cancelled.
func (s *sess) operationLocked(ctx context.Context, decl api.Environment, binding, seq uint64, req envapi.Request, b *budget) Operation {
	op := s.targetLocked(ctx, decl, binding)
	grant, done := s.openControllerLocked(ctx, decl, binding, seq, b)
	op.Sequence, op.Request, op.Context, op.ContextDone = seq, req, grant, done
	return op
}

// targetLocked answers the operation of binding of environment decl as
// far as where it goes and with which credential: its declaration, the
// declaration as authorised and the credential from Secrets, and those of
// every declared environment of the session (credErr when one could not
// be read). An instance uses the credential its template was authorised
// with; it can never bring its own.
func (s *sess) targetLocked(ctx context.Context, decl api.Environment, binding uint64) Operation {
	owner, template := decl.Name, ""
	if es := s.st.Envs[decl.Name]; es != nil && es.Template != "" {
		owner, template = es.Template, es.Template
	}
	cred, credErr := s.credentialLocked(ctx, owner)
	var targets []Target
	if credErr == nil {
		targets, credErr = s.targetsLocked(ctx)
	}
	authorized := decl
	for _, d := range s.st.Config.Environments {
		if d.Name == owner {
			authorized = d
		}
	}
	return Operation{
		Operation: envapi.Operation{
			SessionID: s.id, Environment: decl.Name,
			Binding:       &envapi.EnvironmentRef{Name: decl.Name, Sequence: binding},
			Configuration: decl.Configuration,
			Template:      template,
		},
		Declaration: decl,
		Authorized:  authorized,
		Credential:  cred,
		Bindings:    s.bindingsLocked(),
		Targets:     targets,
		credErr:     credErr,
	}
}

// credentialLocked answers the credential of declared environment name
// from Secrets, read once a session is in memory. An error is not
// remembered: the next operation reads it again.
func (s *sess) credentialLocked(ctx context.Context, name string) (string, error) {
	if cred, ok := s.creds[name]; ok {
		return cred, nil
	}
	b, err := s.e.secrets.Get(ctx, s.id, SecretEnvironmentCredential(name))
	if err != nil {
		return "", &credentialError{environment: name, err: err}
	}
	if s.creds == nil {
		s.creds = map[string]string{}
	}
	s.creds[name] = string(b)
	return string(b), nil
}

// targetsLocked answers every declared environment of the session with
// its credential (Operation.Targets). The declarations never change once
// the session is created, nor do the credentials, so the answer is kept
// once every credential was read.
func (s *sess) targetsLocked(ctx context.Context) ([]Target, error) {
	if s.targets != nil || len(s.st.Config.Environments) == 0 {
		return s.targets, nil
	}
	out := make([]Target, 0, len(s.st.Config.Environments))
	for _, d := range s.st.Config.Environments {
		cred, err := s.credentialLocked(ctx, d.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, Target{Authorized: d, Credential: cred})
	}
	s.targets = out
	return out, nil
}

// credentialError is a credential that could not be read from Secrets.
type credentialError struct {
	environment string
	err         error
}

func (e *credentialError) Error() string {
	return "the credential of environment " + e.environment + " could not be read: " + e.err.Error()
}

func (e *credentialError) Unwrap() error { return e.err }

// bindingsLocked answers the current binding of every environment of the
// session, by name.
func (s *sess) bindingsLocked() []envapi.EnvironmentRef {
	out := make([]envapi.EnvironmentRef, 0, len(s.st.Envs))
	for name, es := range s.st.Envs {
		out = append(out, envapi.EnvironmentRef{Name: name, Sequence: es.Binding})
	}
	slices.SortFunc(out, func(a, b envapi.EnvironmentRef) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// codeCredentialUnavailable is the failure of an operation that was not
// sent because its environment's credential could not be read.
const codeCredentialUnavailable = "credential_unavailable"

// deliver sends op through the configured Environments, unless its
// credential could not be read: then nothing is sent and the operation
// fails (retryable) as if the provider had refused it.
func (e *Engine) deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.credErr != nil {
		// The operation's own credential, or another environment's,
		// which its answer must be kept from recording.
		name := op.Environment
		var ce *credentialError
		if errors.As(op.credErr, &ce) {
			name = ce.environment
		}
		return envapi.Failure(codeCredentialUnavailable,
			"the credential of environment "+name+" could not be read; the operation was not sent", true, nil), nil
	}
	return e.cfg.Environments.Deliver(ctx, op)
}

// End ends a session: it records session_end_started (no new messages are
// accepted from then on), waits for a running activation, cancels
// unfinished tools, detaches every environment that was set up (a failed
// detach does not prevent ending) and records session_ended.
func (e *Engine) End(ctx context.Context, id string) (api.SessionSummary, error) {
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return api.SessionSummary{}, err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return api.SessionSummary{}, err
	}
	defer s.mu.Unlock()
	for s.act != nil {
		done := s.act.done
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			s.mu.Lock()
			return api.SessionSummary{}, ctx.Err()
		}
		s.mu.Lock()
	}
	switch s.st.Status {
	case api.StatusEnded:
		return s.summaryLocked(), nil
	case api.StatusIdle:
	default:
		return api.SessionSummary{}, fmt.Errorf("%w: session %s is %s", ErrWrongState, id, s.st.Status)
	}
	s.stopWakeLocked()
	if _, err := s.commitLocked(rec(api.KindSessionEndStarted, struct{}{})); err != nil {
		return api.SessionSummary{}, err
	}
	s.cancelToolsLocked(ErrCancelled)
	for len(s.tools) > 0 {
		var settled chan struct{}
		for _, t := range s.tools {
			settled = t.settled
			break
		}
		s.mu.Unlock()
		<-settled
		s.mu.Lock()
	}
	// Environment operations being delivered (a turn-end cleanup, a call
	// made before the session was ending) are answered before anything is
	// detached, so that nothing of theirs is recorded after
	// session_ended; none starts from now on.
	for s.envBusy > 0 {
		done := s.envIdle
		s.mu.Unlock()
		<-done
		s.mu.Lock()
	}
	for _, name := range s.envNamesLocked(envReady, envStarting, envUnknown) {
		s.envOpLocked(ctx, name, envapi.Detach(), nil)
	}
	// What ended without its end written (a tool stopped above, a detach)
	// is closed before the session ends, as a reload would close it:
	// nothing of the session follows session_ended.
	if err := s.closeUnendedLocked(); err != nil {
		s.faulted = true
		return api.SessionSummary{}, err
	}
	if _, err := s.commitLocked(rec(api.KindSessionEnded, struct{}{})); err != nil {
		// Everything of the ending is done but its record: the session
		// goes once released, and its reload ends it with the fault as
		// the ending's failure, rather than staying ending in memory.
		s.faulted = true
		return api.SessionSummary{}, err
	}
	return s.summaryLocked(), nil
}

// envNamesLocked lists environments in any of the given states, sorted.
func (s *sess) envNamesLocked(states ...string) []string {
	var names []string
	for name, es := range s.st.Envs {
		for _, want := range states {
			if es.State == want {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// Delete removes an ended or failed session: each environment that was set
// up is torn down as its own journaled operation, then the session's
// secrets and the journal are removed. If a teardown fails nothing is
// removed and Delete may be tried again; so may it when removing the
// secrets or the journal fails.
func (e *Engine) Delete(ctx context.Context, id string) error {
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if st := s.st.Status; st != api.StatusEnded && st != api.StatusFailed {
		return fmt.Errorf("%w: session %s is %s, not ended or failed", ErrWrongState, id, st)
	}
	if s.deleting {
		// Its teardowns are in flight (the lock is released while each is
		// delivered): another one would send each a second time.
		return fmt.Errorf("%w: session %s is being deleted", ErrWrongState, id)
	}
	s.deleting = true
	defer func() { s.deleting = false }()
	var failedEnvs []string
	for _, name := range s.envNamesLocked(envReady, envStarting, envUnknown, envDetached, envFailed) {
		if ok, _ := s.envOpLocked(ctx, name, envapi.Teardown(), nil); !ok {
			failedEnvs = append(failedEnvs, name)
		}
	}
	if len(failedEnvs) > 0 {
		return &TurnError{Code: api.CodeExecutorFailed, Retryable: true, Err: ErrWrongState,
			Message: "teardown failed for " + strings.Join(failedEnvs, ", ")}
	}
	// The secrets go first: a delete that fails after them leaves the
	// session, which a delete tried again removes, and not credentials
	// that no session names any more.
	if err := e.secrets.DeleteAll(ctx, id); err != nil {
		return fmt.Errorf("session %s: delete secrets: %w", id, err)
	}
	if err := e.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("session %s: delete journal: %w", id, err)
	}
	e.mu.Lock()
	if e.live[id] == s {
		delete(e.live, id)
	}
	e.released.drop(id)
	delete(e.faults, id)
	e.forgetCloseLocked(id)
	// A deleted session has nothing left to run: its lease goes too.
	s.releaseLeaseLocked()
	e.mu.Unlock()
	s.evicted, s.st = true, nil
	e.forgetUnrecorded(id)
	return nil
}
