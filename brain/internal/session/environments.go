package session

import (
	"context"

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
	// Declaration is the environment as declared (credential removed).
	Declaration api.Environment
	// Credential is the environment's credential from Secrets; never
	// journalled.
	Credential string
}

// Environments delivers environment operations. Each method sends its
// operation once and answers the provider's receipt, or an error when no
// receipt could be obtained (the engine then records the outcome unknown
// and environment_unreachable). Implementations must return promptly when
// ctx ends.
type Environments interface {
	Setup(ctx context.Context, op Operation) (envapi.Receipt, error)
	Detach(ctx context.Context, op Operation) (envapi.Receipt, error)
	Teardown(ctx context.Context, op Operation) (envapi.Receipt, error)
	Execute(ctx context.Context, op Operation) (envapi.Receipt, error)
	Cancel(ctx context.Context, op Operation) (envapi.Receipt, error)
	Call(ctx context.Context, op Operation) (envapi.Receipt, error)
}

// Validator is implemented by an Environments that checks declarations
// when a session is created (driver, URL, route); an error refuses the
// create as invalid before anything is journaled.
type Validator interface {
	ValidateEnvironment(env api.Environment) error
}

// deliver routes op to the method of its request type.
func deliver(ctx context.Context, envs Environments, op Operation) (envapi.Receipt, error) {
	switch op.Request.Type {
	case envapi.RequestSetup:
		return envs.Setup(ctx, op)
	case envapi.RequestDetach:
		return envs.Detach(ctx, op)
	case envapi.RequestTeardown:
		return envs.Teardown(ctx, op)
	case envapi.RequestExecute:
		return envs.Execute(ctx, op)
	case envapi.RequestCancel:
		return envs.Cancel(ctx, op)
	default:
		return envs.Call(ctx, op)
	}
}
