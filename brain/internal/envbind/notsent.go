package envbind

import (
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Failure codes of an operation Brain did not send. Deliver answers them
// as a failure receipt (no error): the operation certainly did not reach
// a provider, so its outcome is not unknown and its environment is not
// unreachable.
const (
	// CodeNoRoute: the environment has no route (its driver's route or
	// the default route is no longer configured, or its endpoint cannot
	// be used). Sending again fails the same way until the operator
	// configures one.
	CodeNoRoute = "no_route"
	// CodeNotSent: Brain could not prepare the operation: its public URL
	// is not known yet or the server key cannot be read (retryable: a
	// later attempt may succeed), or it cannot be encoded (not
	// retryable).
	CodeNotSent = "not_sent"
)

// notSent answers the failure receipt of an operation that was not sent.
func notSent(code, message string, retryable bool) envapi.Receipt {
	return envapi.Failure(code, message+"; the operation was not sent", retryable, nil)
}

// keyUnreadable answers the failure of op when the server key cannot be
// read. The failure is journaled and handed to the agent: it does not
// name the key file, which the log does.
func (b *Binder) keyUnreadable(op session.Operation, err error) envapi.Receipt {
	b.log.Warn("envbind: the server key cannot be read; an operation was not sent",
		"session", op.SessionID, "environment", op.Environment, "sequence", op.Sequence, "error", err)
	return notSent(CodeNotSent, fmt.Sprintf("environment %s: operation %d: Brain's server key cannot be read", op.Environment, op.Sequence), true)
}
