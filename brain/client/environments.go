package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// EnvironmentView describes one environment binding of a session.
type EnvironmentView = envapi.EnvironmentView

// EnvironmentRef names one incarnation of an environment: a view's
// Reference. Control requests with the reference of a replaced
// incarnation are refused.
type EnvironmentRef = envapi.EnvironmentRef

// Control runs an environment control request on the session and answers
// its raw result. The typed methods below wrap each operation.
func (s *Session) Control(ctx context.Context, req envapi.ControlRequest, opts ...CallOption) (json.RawMessage, error) {
	r, err := s.control(ctx, req, answersJSON, opts)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(r.body), nil
}

// control sends a control request whose 2xx answer is one check takes.
func (s *Session) control(ctx context.Context, req envapi.ControlRequest, check CallOption, opts []CallOption) (*response, error) {
	return s.c.do(ctx, http.MethodPost, s.path("/environments"), req, true, append(opts[:len(opts):len(opts)], check))
}

// viewFields are the fields every environment view holds.
var viewFields = []string{"reference", "state"}

func (s *Session) view(ctx context.Context, req envapi.ControlRequest, opts []CallOption) (EnvironmentView, error) {
	r, err := s.control(ctx, req, answers[EnvironmentView](viewFields...), opts)
	if err != nil {
		return EnvironmentView{}, err
	}
	return decode[EnvironmentView](r, viewFields...)
}

func ref(r EnvironmentRef) *envapi.EnvironmentRef { return &r }

// ListEnvironments lists the session's environments.
func (s *Session) ListEnvironments(ctx context.Context, opts ...CallOption) ([]EnvironmentView, error) {
	r, err := s.control(ctx, envapi.ControlRequest{Operation: envapi.ControlList}, answers[environmentList]("environments"), opts)
	if err != nil {
		return nil, err
	}
	l, err := decode[environmentList](r, "environments")
	return l.Environments, err
}

// environmentList is the answer of a list control request.
type environmentList struct {
	Environments []EnvironmentView `json:"environments"`
}

// GetEnvironment describes one incarnation of an environment; an old
// reference of a replaced incarnation is refused.
func (s *Session) GetEnvironment(ctx context.Context, env EnvironmentRef, opts ...CallOption) (EnvironmentView, error) {
	return s.view(ctx, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: ref(env)}, opts)
}

// CreateEnvironment creates an instance of a template environment.
func (s *Session) CreateEnvironment(ctx context.Context, template, name string, configuration json.RawMessage, opts ...CallOption) (EnvironmentView, error) {
	return s.view(ctx, envapi.ControlRequest{Operation: envapi.ControlCreate, Template: template, Name: name, Configuration: configuration}, opts)
}

// SetupEnvironment sets up a declared (or failed) environment.
func (s *Session) SetupEnvironment(ctx context.Context, env EnvironmentRef, opts ...CallOption) (EnvironmentView, error) {
	return s.view(ctx, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: ref(env)}, opts)
}

// UpdateEnvironment replaces the configuration of an environment that was
// never set up.
func (s *Session) UpdateEnvironment(ctx context.Context, env EnvironmentRef, configuration json.RawMessage, opts ...CallOption) (EnvironmentView, error) {
	if configuration == nil {
		configuration = json.RawMessage("null")
	}
	return s.view(ctx, envapi.ControlRequest{Operation: envapi.ControlUpdate, Environment: ref(env), Configuration: configuration}, opts)
}

// DeleteEnvironment deletes an environment and answers the raw result.
func (s *Session) DeleteEnvironment(ctx context.Context, env EnvironmentRef, opts ...CallOption) (json.RawMessage, error) {
	return s.Control(ctx, envapi.ControlRequest{Operation: envapi.ControlDelete, Environment: ref(env)}, opts...)
}

// CallEnvironment calls a method of one incarnation of an environment
// through environment control and answers its raw result.
func (s *Session) CallEnvironment(ctx context.Context, env EnvironmentRef, method string, input json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	return s.Control(ctx, envapi.ControlRequest{Operation: envapi.ControlCall, Environment: ref(env), Method: method, Input: input}, opts...)
}

// CallMethod calls method name on the current binding of environment env
// (POST .../environments/{env}/calls/{name}) and answers its output.
func (s *Session) CallMethod(ctx context.Context, env, name string, input json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	if input == nil {
		input = json.RawMessage("null")
	}
	body := struct {
		Input json.RawMessage `json:"input"`
	}{input}
	r, err := s.c.do(ctx, http.MethodPost, s.path("/environments/"+segment(env)+"/calls/"+segment(name)), body, true, append(opts[:len(opts):len(opts)], answers[struct {
		Output json.RawMessage `json:"output"`
	}]("output?")))
	if err != nil {
		return nil, err
	}
	out, err := decode[struct {
		Output json.RawMessage `json:"output"`
	}](r, "output?")
	return out.Output, err
}
