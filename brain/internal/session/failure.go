package session

import (
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxFailureMessage bounds the message of a failure the engine records
// or answers in another party's words (a model provider's error, an
// environment's failure or unknown outcome, a tool's error, a loop's
// failure): the bound of an ApiError's message and of a receipt's. It is
// the model clients' bound, which cut a provider's message as the
// engine does.
const maxFailureMessage = model.MaxMessageBytes

// boundMessage answers s when it holds at most maxFailureMessage bytes;
// otherwise its head, cut between characters, followed by a marker
// saying how long the whole message was, maxFailureMessage bytes at
// most in all (model.CutMessage).
func boundMessage(s string) string {
	return model.CutMessage(s, len(s))
}

// boundFailure answers f with its message bounded.
func boundFailure(f api.Failure) api.Failure {
	f.Message = boundMessage(f.Message)
	return f
}

// boundOutcome answers o with its messages bounded; o itself is left as
// it is.
func boundOutcome(o api.Outcome) api.Outcome {
	o.Message = boundMessage(o.Message)
	if o.Error != nil && len(o.Error.Message) > maxFailureMessage {
		e := *o.Error
		e.Message = boundMessage(e.Message)
		o.Error = &e
	}
	return o
}

// boundEnvOutcome answers o with its messages bounded; o itself is left
// as it is.
func boundEnvOutcome(o envapi.Outcome) envapi.Outcome {
	o.Message = boundMessage(o.Message)
	if o.Error != nil && len(o.Error.Message) > maxFailureMessage {
		e := *o.Error
		e.Message = boundMessage(e.Message)
		o.Error = &e
	}
	return o
}
