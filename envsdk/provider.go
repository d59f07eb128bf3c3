package envsdk

import (
	"encoding/json"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Provider is an environment/v1 provider. Embed Base to inherit the default
// behaviour of the operations a provider does not need.
//
// Each method runs with a *Ctx whose Context ends when the operation
// returns, when its deadline passes or when Brain cancels it. Return an
// *Error for a failure the caller should see with its code.
type Provider interface {
	// Setup validates the binding's configuration and establishes the
	// binding; allocation may be lazy.
	Setup(c *Ctx) (SetupResult, error)
	// Execute runs an implementation (a Tool or an Agentloop). See the
	// package documentation for how the receipt and error are answered.
	Execute(c *Ctx, x *Execution) (envapi.Receipt, error)
	// Detach releases the session attachment and keeps owned resources.
	Detach(c *Ctx) error
	// Teardown releases the resources the binding owns.
	Teardown(c *Ctx) error
}

// SetupResult is what a successful setup answers.
type SetupResult struct {
	// OnTurnEnd names a method Brain calls after every turn, with input
	// {"sequence": <turn_started>}; empty registers nothing.
	OnTurnEnd string
}

// Canceler is implemented by providers that need to do more than end the
// target's contexts when Brain cancels an execution (for example kill a
// process that lives outside this process). The handler ends the target's
// Ctx.Context and Execution.Context (those of a Tool that answered
// returned and has not finished, too) before it calls Cancel, and calls
// Cancel for every cancel, whether or not the target runs here; a repeat
// of a cancel at its own sequence answers unknown and does not call it
// again.
type Canceler interface {
	Cancel(c *Ctx, target uint64) error
}

// MethodProvider is implemented by providers with methods callable through
// call requests.
type MethodProvider interface {
	Methods() map[string]Method
}

// Method is one provider method.
//
// Description, Effect and the schemas describe the method; the handler
// neither sends nor checks them. Brain learns a method from the session's
// environment declaration ("methods": name, description, effect,
// input_schema, output_schema), checks a call's input against it before
// it sends the call and the output when it comes back, so the declaration
// is where they take effect.
// Run must still check its own input: the handler hands it the call's
// input as it came.
type Method struct {
	Description string
	// Effect is "" (none) or "replace", as declared to Brain.
	Effect string
	// InputSchema and OutputSchema are the JSON Schemas declared to Brain.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Run computes the output; its JSON is the result receipt's output.
	Run func(c *Ctx, input json.RawMessage) (any, error)
}

// Base gives a provider the default behaviour: setup accepts any
// configuration, execute is unsupported, detach and teardown accept. The
// handler's binding tracking (see Options.UntrackedBindings) refuses a
// duplicate setup and operations after teardown before they get here.
type Base struct{}

// Setup accepts.
func (Base) Setup(*Ctx) (SetupResult, error) { return SetupResult{}, nil }

// Execute answers unsupported.
func (Base) Execute(*Ctx, *Execution) (envapi.Receipt, error) {
	return envapi.Receipt{}, Fail(envapi.CodeUnsupported, "this environment executes nothing")
}

// Detach accepts.
func (Base) Detach(*Ctx) error { return nil }

// Teardown accepts.
func (Base) Teardown(*Ctx) error { return nil }

// Output marshals v into a result receipt.
func Output(v any) (envapi.Receipt, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return envapi.Receipt{}, Failf(envapi.CodeInvalidOutput, "output does not marshal: %v", err)
	}
	return envapi.Result(raw), nil
}
