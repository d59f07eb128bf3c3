package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Permissions of an EnvironmentGrant.
const (
	PermRead   = "read"
	PermCreate = "create"
	PermSetup  = "setup"
	PermUpdate = "update"
	PermDelete = "delete"
	PermCall   = "call"
)

// EnvironmentError reports an environment operation that the provider
// answered with a failure (or whose outcome is unknown) on behalf of a
// control request. APIError answers it as executor_failed with details
// {code, message, retryable, details?, sequence}.
type EnvironmentError struct {
	Code      string
	Message   string
	Retryable bool
	Details   json.RawMessage
	// Sequence is the operation's started record.
	Sequence uint64
}

func (e *EnvironmentError) Error() string {
	return fmt.Sprintf("session: environment operation %d failed: %s: %s", e.Sequence, e.Code, e.Message)
}

// controller bounds a control request by the caller's grants. The operator
// (the session API) is not bounded.
type controller struct {
	bounded bool
	grants  []api.EnvironmentGrant
	// own is the environment the calling extension runs on (a tool's
	// placement, a controller context's environment); it may not replace
	// it, nor the agentloop's bootstrap environment.
	own string
}

// allows reports whether the caller holds perm on env (a grant naming an
// instance's template covers the instance) and, for call, on method.
func (c controller) allows(s *sess, env, perm, method string) bool {
	if !c.bounded {
		return true
	}
	names := []string{env}
	if es := s.st.Envs[env]; es != nil && es.Template != "" {
		names = append(names, es.Template)
	}
	for _, g := range c.grants {
		if !slices.Contains(names, g.Environment) || !slices.Contains(g.Permissions, perm) {
			continue
		}
		if perm == PermCall && len(g.Methods) > 0 && !slices.Contains(g.Methods, method) {
			continue
		}
		return true
	}
	return false
}

func (c controller) require(s *sess, env, perm, method string) error {
	if c.allows(s, env, perm, method) {
		return nil
	}
	what := perm
	if method != "" {
		what += " " + method
	}
	return fmt.Errorf("%w: %s on environment %s", ErrNotGranted, what, env)
}

// Control runs an EnvironmentControlRequest for the operator, as POST
// /v1/sessions/{id}/environments does: list answers {"environments":
// [EnvironmentView]}; get, create, setup, update and delete answer the
// EnvironmentView; call answers the method's output.
func (e *Engine) Control(ctx context.Context, id string, req envapi.ControlRequest) (json.RawMessage, error) {
	write := req.Operation != envapi.ControlList && req.Operation != envapi.ControlGet
	s, err := e.acquire(ctx, id, write)
	if err != nil {
		return nil, err
	}
	if write {
		defer s.releaseWrite()
	} else {
		defer s.releaseRead()
	}
	if err := s.lockLive(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.controlLocked(ctx, controller{}, req)
}

// CallEnvironment calls method on the current binding of environment env
// with input and answers the provider's output, as POST
// /v1/sessions/{id}/environments/{env}/calls/{name} does. The call is a
// journaled environment_call operation.
func (e *Engine) CallEnvironment(ctx context.Context, id, env, method string, input json.RawMessage) (json.RawMessage, error) {
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	es := s.st.Envs[env]
	if es == nil {
		return nil, fmt.Errorf("environment %s: %w", env, ErrNotFound)
	}
	return s.callLocked(ctx, controller{}, api.EnvironmentRef{Name: env, Sequence: es.Binding}, method, input)
}

// Environments runs an environment control request bounded by the
// execution's own grants (the agentloop's or the tool's environments).
func (x *execution) Environments(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if err := x.check(ctx, envapi.MethodEnvironments); err != nil {
		return nil, err
	}
	req, err := envapi.DecodeControlRequest(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	// The execution's authority is checked where its request runs: it
	// may have completed, or (a controller context) its binding may have
	// been replaced, since the call was admitted.
	if err := x.liveLocked(envapi.MethodEnvironments); err != nil {
		return nil, err
	}
	if err := x.openLocked(); err != nil {
		return nil, err
	}
	return s.controlLocked(ctx, controller{bounded: true, grants: x.grants, own: x.ownEnvLocked()}, req)
}

// ownEnvLocked answers the environment the execution runs on.
func (x *execution) ownEnvLocked() string {
	switch {
	case x.ctrl != nil:
		return x.ctrl.Name
	case x.tool != nil:
		return x.tool.env
	case x.s.st.Config.Agentloop != nil:
		return x.s.st.Config.Agentloop.Environment
	}
	return ""
}

// currentLocked answers the state of the binding ref names, refusing a
// reference to an older incarnation.
func (s *sess) currentLocked(ref *envapi.EnvironmentRef) (*envState, error) {
	if ref == nil {
		return nil, fmt.Errorf("%w: an environment reference is required", ErrInvalid)
	}
	es := s.st.Envs[ref.Name]
	if es == nil || es.Binding != ref.Sequence {
		return nil, fmt.Errorf("environment %s/%d: %w", ref.Name, ref.Sequence, ErrNotFound)
	}
	return es, nil
}

// mutableLocked refuses control mutations once the session no longer runs.
func (s *sess) mutableLocked() error {
	switch s.st.Status {
	case api.StatusIdle, api.StatusRunning:
		return nil
	}
	return fmt.Errorf("%w: session %s is %s", ErrWrongState, s.id, s.st.Status)
}

func (s *sess) controlLocked(ctx context.Context, c controller, req envapi.ControlRequest) (json.RawMessage, error) {
	if s.st == nil {
		return nil, fmt.Errorf("session %s: %w", s.id, ErrClosed)
	}
	switch req.Operation {
	case envapi.ControlList:
		names := make([]string, 0, len(s.st.Envs))
		for name := range s.st.Envs {
			if c.allows(s, name, PermRead, "") {
				names = append(names, name)
			}
		}
		sort.Slice(names, func(i, j int) bool {
			a, b := s.st.Envs[names[i]], s.st.Envs[names[j]]
			if a.Binding != b.Binding {
				return a.Binding < b.Binding
			}
			return names[i] < names[j]
		})
		views := make([]envapi.EnvironmentView, 0, len(names))
		for _, name := range names {
			views = append(views, s.viewLocked(name))
		}
		return json.Marshal(struct {
			Environments []envapi.EnvironmentView `json:"environments"`
		}{views})
	case envapi.ControlGet:
		if _, err := s.currentLocked(req.Environment); err != nil {
			return nil, err
		}
		if err := c.require(s, req.Environment.Name, PermRead, ""); err != nil {
			return nil, err
		}
		return json.Marshal(s.viewLocked(req.Environment.Name))
	case envapi.ControlCreate:
		return s.createEnvLocked(ctx, c, req)
	case envapi.ControlSetup:
		es, err := s.currentLocked(req.Environment)
		if err != nil {
			return nil, err
		}
		if err := c.require(s, req.Environment.Name, PermSetup, ""); err != nil {
			return nil, err
		}
		if err := s.mutableLocked(); err != nil {
			return nil, err
		}
		if es.State != envDeclared && es.State != envFailed {
			return nil, fmt.Errorf("%w: environment %s is %s, not declared", ErrWrongState, req.Environment.Name, es.State)
		}
		decl, _ := s.declLocked(req.Environment.Name)
		s.envOpLocked(ctx, decl.Name, envapi.Setup(decl.Configuration), nil)
		return json.Marshal(s.viewLocked(decl.Name))
	case envapi.ControlUpdate:
		es, err := s.currentLocked(req.Environment)
		if err != nil {
			return nil, err
		}
		if err := c.require(s, req.Environment.Name, PermUpdate, ""); err != nil {
			return nil, err
		}
		if err := s.mutableLocked(); err != nil {
			return nil, err
		}
		if es.SetUp || es.State != envDeclared {
			return nil, fmt.Errorf("%w: environment %s can be updated only before its first setup", ErrWrongState, req.Environment.Name)
		}
		if err := s.checkConfigurationLocked(req.Environment.Name, req.Configuration); err != nil {
			return nil, err
		}
		conf, err := compactJSON(req.Configuration)
		if err != nil {
			return nil, err
		}
		if _, err := s.commitLocked(rec(kindEnvironmentUpdated, envUpdated{Environment: api.EnvironmentRef(*req.Environment), Configuration: conf})); err != nil {
			return nil, err
		}
		return json.Marshal(s.viewLocked(req.Environment.Name))
	case envapi.ControlDelete:
		return s.deleteEnvLocked(ctx, c, req.Environment)
	case envapi.ControlCall:
		if req.Environment == nil {
			return nil, fmt.Errorf("%w: call needs an environment", ErrInvalid)
		}
		return s.callLocked(ctx, c, api.EnvironmentRef(*req.Environment), req.Method, req.Input)
	}
	return nil, fmt.Errorf("%w: environment control operation %q", ErrInvalid, req.Operation)
}

// templateLocked answers the declaration of the template an environment
// is validated by: its own template, or the one it was created from.
func (s *sess) templateLocked(name string) *api.Environment {
	if es := s.st.Envs[name]; es != nil && es.Template != "" {
		name = es.Template
	}
	for i := range s.st.Config.Environments {
		if env := &s.st.Config.Environments[i]; env.Name == name && env.Template != nil {
			return env
		}
	}
	return nil
}

// checkConfigurationLocked validates a configuration against the
// configuration_schema of the environment's template, if any.
func (s *sess) checkConfigurationLocked(name string, conf json.RawMessage) error {
	t := s.templateLocked(name)
	if t == nil || len(t.Template.ConfigurationSchema) == 0 {
		return nil
	}
	schema, err := s.e.schemas.get(t.Template.ConfigurationSchema)
	if err != nil {
		return fmt.Errorf("%w: template %s: %v", ErrInvalid, t.Name, err)
	}
	if err := schema.Validate(orNullJSON(conf)); err != nil {
		return fmt.Errorf("%w: configuration does not match the configuration_schema of template %s: %v", ErrInvalid, t.Name, err)
	}
	return nil
}

func (s *sess) createEnvLocked(ctx context.Context, c controller, req envapi.ControlRequest) (json.RawMessage, error) {
	var tmpl *api.Environment
	for i := range s.st.Config.Environments {
		if env := &s.st.Config.Environments[i]; env.Name == req.Template && env.Template != nil {
			tmpl = env
		}
	}
	if tmpl == nil {
		return nil, fmt.Errorf("template %s: %w", req.Template, ErrNotFound)
	}
	if err := c.require(s, tmpl.Name, PermCreate, ""); err != nil {
		return nil, err
	}
	if err := s.mutableLocked(); err != nil {
		return nil, err
	}
	if !envapi.ValidIdentifier(req.Name) {
		return nil, fmt.Errorf("%w: environment name %q", ErrInvalid, req.Name)
	}
	if es := s.st.Envs[req.Name]; es != nil && es.State != envDeleted {
		return nil, fmt.Errorf("%w: environment %s exists", ErrWrongState, req.Name)
	}
	// A name keeps what it named: a declared environment's name (deleted
	// or not) is never taken over, and a deleted instance's name only by a
	// new instance of the same template. Tools placed on the name, grants
	// naming it and the agentloop's environment would otherwise reach
	// another provider under the old name.
	for _, d := range s.st.Config.Environments {
		if d.Name == req.Name {
			return nil, fmt.Errorf("%w: environment %s is declared by the session", ErrWrongState, req.Name)
		}
	}
	if es := s.st.Envs[req.Name]; es != nil && es.Template != tmpl.Name {
		return nil, fmt.Errorf("%w: environment name %s was used by an instance of template %s", ErrWrongState, req.Name, es.Template)
	}
	instances := 1 // the template itself counts
	for _, es := range s.st.Envs {
		if es.Template == tmpl.Name && es.State != envDeleted {
			instances++
		}
	}
	if max := tmpl.Template.MaxInstances; max > 0 && instances >= max {
		return nil, fmt.Errorf("%w: template %s allows %d instances", ErrWrongState, tmpl.Name, max)
	}
	conf := req.Configuration
	if conf == nil {
		conf = tmpl.Configuration
	}
	if err := s.checkConfigurationLocked(tmpl.Name, conf); err != nil {
		return nil, err
	}
	conf, err := compactJSON(conf)
	if err != nil {
		return nil, err
	}
	decl := *tmpl
	decl.Name, decl.Template, decl.Credential, decl.Configuration = req.Name, nil, "", conf
	if _, err := s.commitLocked(rec(kindEnvironmentCreated, envCreated{Declaration: decl, Template: tmpl.Name})); err != nil {
		return nil, err
	}
	if decl.Lifecycle != api.LifecycleManual {
		s.envOpLocked(ctx, decl.Name, envapi.Setup(decl.Configuration), nil)
	}
	return json.Marshal(s.viewLocked(decl.Name))
}

func (s *sess) deleteEnvLocked(ctx context.Context, c controller, ref *envapi.EnvironmentRef) (json.RawMessage, error) {
	es, err := s.currentLocked(ref)
	if err != nil {
		return nil, err
	}
	if err := c.require(s, ref.Name, PermDelete, ""); err != nil {
		return nil, err
	}
	if seq := s.lifecycleOpenLocked(ref.Name); seq != 0 {
		// A teardown now would race the operation in flight (a setup
		// ending after it would bring the binding back as ready), or
		// be a second teardown.
		return nil, fmt.Errorf("%w: environment %s has operation %d in flight", ErrWrongState, ref.Name, seq)
	}
	switch {
	case es.State == envDeleted:
	case !es.SetUp:
		if _, err := s.commitLocked(rec(kindEnvironmentDeleted, envUpdated{Environment: api.EnvironmentRef(*ref)})); err != nil {
			return nil, err
		}
	default:
		if err := s.mutableLocked(); err != nil {
			return nil, err
		}
		receipt, seq, err := s.envOpErrLocked(ctx, ref.Name, envapi.Teardown())
		if err != nil {
			return nil, operationError(err, seq)
		}
		if e := receiptError(receipt, seq); e != nil {
			return nil, e
		}
	}
	return json.Marshal(s.viewLocked(ref.Name))
}

// lifecycleOpenLocked answers the started sequence of a setup, detach or
// teardown of environment name that has not ended yet, or 0.
func (s *sess) lifecycleOpenLocked(name string) uint64 {
	for seq, eff := range s.st.Open {
		switch eff.Prefix {
		case "environment_setup", "environment_detach", "environment_teardown":
			if eff.Environment == name {
				return seq
			}
		}
	}
	return 0
}

// callLocked runs a journaled environment call on the binding ref.
func (s *sess) callLocked(ctx context.Context, c controller, ref api.EnvironmentRef, method string, input json.RawMessage) (json.RawMessage, error) {
	eref := envapi.EnvironmentRef(ref)
	es, err := s.currentLocked(&eref)
	if err != nil {
		return nil, err
	}
	if !envapi.ValidIdentifier(method) {
		return nil, fmt.Errorf("%w: method %q is not an identifier", ErrInvalid, method)
	}
	if err := c.require(s, ref.Name, PermCall, method); err != nil {
		return nil, err
	}
	if err := s.mutableLocked(); err != nil {
		return nil, err
	}
	if es.State != envReady {
		return nil, fmt.Errorf("%w: environment %s is %s (%s)", ErrWrongState, ref.Name, es.State, api.FailureEnvironmentNotReady)
	}
	decl, _ := s.declLocked(ref.Name)
	input = orNullJSON(input)
	var spec *api.EnvironmentMethod
	if len(decl.Methods) > 0 {
		m, ok := decl.Methods[method]
		if !ok {
			return nil, fmt.Errorf("%w: environment %s declares no method %q", ErrInvalid, ref.Name, method)
		}
		spec = &m
		if m.Effect == "replace" {
			if err := s.canReplaceLocked(c, ref.Name, method); err != nil {
				return nil, err
			}
			// Execution stays idle until the replacement is recorded.
			s.replacing++
			defer func() {
				s.replacing--
				s.scheduleWakeLocked()
			}()
		}
		if schema, err := s.e.schemas.get(m.InputSchema); err == nil {
			if err := schema.Validate(input); err != nil {
				return nil, fmt.Errorf("%w: input of %s: %v", ErrInvalid, method, err)
			}
		}
	}
	in, err := compactJSON(input)
	if err != nil {
		return nil, err
	}
	var replaced []journal.Record
	if spec != nil && spec.Effect == "replace" {
		// A call that ends well makes the environment a new incarnation
		// (old references and the old reporter stop working), recorded
		// in the same append as the call's end.
		replaced = append(replaced, rec(kindEnvironmentReplaced, envUpdated{Environment: ref}))
	}
	receipt, seq, err := s.envOpErrLocked(ctx, ref.Name, envapi.Call(method, in), replaced...)
	if err != nil {
		return nil, operationError(err, seq)
	}
	if e := receiptError(receipt, seq); e != nil {
		return nil, e
	}
	var out json.RawMessage
	switch receipt.Type {
	case envapi.ReceiptResult, envapi.ReceiptReturned:
		out = receipt.Output
	case envapi.ReceiptProgress:
		out = receipt.Data
	}
	out = orNullJSON(out)
	if spec != nil && len(spec.OutputSchema) > 0 {
		if schema, err := s.e.schemas.get(spec.OutputSchema); err == nil {
			if err := schema.Validate(out); err != nil {
				// The error may quote the provider's output (a member's
				// name): it is bounded as the provider's own words are.
				return nil, &EnvironmentError{Code: envapi.CodeInvalidOutput, Message: boundMessage("output of " + method + ": " + err.Error()), Sequence: seq}
			}
		}
	}
	return out, nil
}

// canReplaceLocked refuses a method with effect "replace" unless the
// session's execution is idle (no activation, and no tool still holding
// execution resources: one closed as cancelled runs until its cancel is
// answered) and, for an extension, the environment is neither its own
// nor the agentloop's bootstrap environment.
func (s *sess) canReplaceLocked(c controller, env, method string) error {
	if c.bounded {
		boot := ""
		if a := s.st.Config.Agentloop; a != nil {
			boot = a.Environment
		}
		if env == c.own || env == boot {
			return fmt.Errorf("%w: %s replaces environment %s, which an extension cannot replace from inside it (its own or the agentloop's)", ErrNotGranted, method, env)
		}
	}
	if s.act != nil || len(s.tools) > 0 || len(s.holding) > 0 || s.replacing > 0 {
		return fmt.Errorf("%w: %s replaces environment %s and needs idle execution (an activation, a tool or another replacement is running)", ErrWrongState, method, env)
	}
	return nil
}

// receiptError converts a failure or unknown receipt to an
// EnvironmentError.
func receiptError(r envapi.Receipt, seq uint64) error {
	switch r.Type {
	case envapi.ReceiptFailure:
		return &EnvironmentError{Code: r.Code, Message: boundMessage(r.Message), Retryable: r.Retryable, Details: r.Details, Sequence: seq}
	case envapi.ReceiptUnknown:
		return &EnvironmentError{Code: api.FailureUnknown, Message: boundMessage(r.Message), Sequence: seq}
	}
	return nil
}

// viewLocked builds the EnvironmentView of an environment's current
// binding.
func (s *sess) viewLocked(name string) envapi.EnvironmentView {
	es := s.st.Envs[name]
	decl, binding := s.declLocked(name)
	lc := decl.Lifecycle
	if lc == "" {
		lc = api.LifecycleAutomatic
	}
	v := envapi.EnvironmentView{
		Reference:     envapi.EnvironmentRef{Name: name, Sequence: binding},
		Lifecycle:     lc,
		State:         envDeclared,
		Configuration: orNullJSON(decl.Configuration),
		Methods:       map[string]envapi.MethodSpec{},
		Tools:         []envapi.ToolDefinition{},
	}
	for m, spec := range decl.Methods {
		v.Methods[m] = envapi.MethodSpec{Description: spec.Description, Effect: spec.Effect, InputSchema: orNullJSON(spec.InputSchema), OutputSchema: spec.OutputSchema}
	}
	placedOn := []string{name}
	if es != nil {
		v.State, v.Template = es.State, es.Template
		if es.Template != "" {
			placedOn = append(placedOn, es.Template)
		}
		v.Availability, v.ObservedAtMs = es.Availability, es.ObservedAtMs
		if len(es.Observation) > 0 {
			var o envapi.Observation
			if json.Unmarshal(es.Observation, &o) == nil {
				v.Observation = &o
			}
		}
	}
	for _, t := range s.st.Config.Tools {
		for _, on := range placedOn {
			if _, ok := t.Placements[on]; ok {
				v.Tools = append(v.Tools, envapi.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
				break
			}
		}
	}
	// The pending operation is the oldest one open on the environment,
	// unless a teardown is open: then the binding is deleting, whatever
	// call started before it is still being answered.
	var pending, teardown uint64
	for seq, eff := range s.st.Open {
		if eff.Environment != name || !strings.HasPrefix(eff.Prefix, "environment_") {
			continue
		}
		if pending == 0 || seq < pending {
			pending = seq
		}
		if eff.Prefix == "environment_teardown" {
			teardown = seq
		}
	}
	if teardown != 0 {
		v.State, pending = envapi.StateDeleting, teardown
	}
	if pending == 0 && es != nil && es.Pending != 0 {
		// An unknown lifecycle operation stays pending until the
		// provider resolves it.
		pending = es.Pending
	}
	if pending != 0 {
		v.PendingOperation = &pending
	}
	return v
}
