package session

import (
	"context"
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Operation is one environment/v1 operation the engine asks Environments to
// deliver. Its started record is already durable when it is delivered.
// Operation.Request.Callback, when set, lists the granted methods only; the
// transport mints its URL and token and routes calls back to
// Engine.Execution(session, sequence).
type Operation struct {
	envapi.Operation
	// Declaration is the environment as declared (credential removed),
	// with its current configuration.
	Declaration api.Environment
	// Authorized is the declaration as the session's creator made it (for
	// an instance, its template's), with the configuration given then:
	// the driver, URL and route it names select where operations go and
	// which operator credential they carry. A configuration given later
	// (an instance's, an update's) cannot change them.
	Authorized api.Environment
	// Credential is the environment's credential from Secrets; never
	// journalled.
	Credential string
	// Bindings are the current bindings of every environment of the
	// session. A provider that serves several of them was sent the
	// reporter grant of each and may quote any of them: a transport keeps
	// their tokens out of what it records of the operation's answers and
	// of the reports and calls that reach it.
	Bindings []envapi.EnvironmentRef
	// Targets are the session's declared environments (templates
	// included) as far as where their operations go and with which
	// credential: each declaration as authorised and its credential from
	// Secrets. A provider that serves several of them was sent the
	// credential of each and may quote any of them: a transport keeps
	// those credentials out of what it records of the operation's answers
	// and of the reports and calls that reach it. The slice is shared
	// between operations and must not be modified.
	Targets []Target
	// CallbackDone, set when Request.Callback is, is closed when the
	// execution the callback serves closes; ContextDone, set when Context
	// is, is closed when the operation's controller context closes. A
	// transport revokes the matching invocation token then.
	CallbackDone, ContextDone <-chan struct{}
	// Execution, set with CallbackDone, is the service table of the
	// execution the callback serves: transports that carry the service
	// calls themselves (host connections, the built-in Wasm Tools) serve
	// them through it, so they need no way back to the engine.
	Execution Services
	// Tool is the name of the tool an execute runs (empty for loops and
	// other operations); host environments invoke tools by name.
	Tool string

	// credErr is why the credential could not be read; the operation is
	// then not delivered.
	credErr error
}

// Target is a declared environment as far as where its operations go and
// with which credential (see Operation.Targets).
type Target struct {
	// Authorized is the declaration as the session's creator made it.
	Authorized api.Environment
	// Credential is its credential from Secrets; never journalled.
	Credential string
}

// Environments delivers environment operations. Deliver sends its
// operation once, whatever its request type, and answers the provider's
// receipt, or an error when no receipt could be obtained (the engine then
// records the outcome unknown and environment_unreachable). An operation
// an implementation certainly did not send is answered as a failure
// receipt, not an error: its outcome is not unknown.
// Implementations must return promptly when ctx ends.
type Environments interface {
	Deliver(ctx context.Context, op Operation) (envapi.Receipt, error)
}

// Validator is implemented by an Environments that checks declarations
// when a session is created (driver, URL, route); an error refuses the
// create as invalid before anything is journaled.
type Validator interface {
	ValidateEnvironment(env api.Environment) error
}

// PlacementValidator is implemented by an Environments that checks at
// session create that each tool placement can run on the environment it
// names; an error refuses the create before anything is journaled: as
// unavailable, and retryable, when it is a condition of the server (a
// retryable TurnError, ErrUnavailable or journal.ErrOverloaded, as a
// resolution of the agentloop fails for those), as invalid otherwise.
type PlacementValidator interface {
	ValidatePlacement(env api.Environment, implementation json.RawMessage) error
}
