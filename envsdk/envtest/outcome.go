package envtest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// callbackOutcome is the Outcome an execution callback's result, returned
// and finish take, decoded as Brain decodes it: its fields strictly, with
// no bound on the messages and no value required of an ok outcome (Brain
// reads an absent value as null).
type callbackOutcome struct {
	Status  envapi.OutcomeStatus `json:"status"`
	Value   json.RawMessage      `json:"value,omitempty"`
	Error   *callbackError       `json:"error,omitempty"`
	Message string               `json:"message,omitempty"`
	Content json.RawMessage      `json:"content,omitempty"`
}

type callbackError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// checkOutcome refuses what Brain refuses as a callback's Outcome: a
// missing or null input, an unknown field, a status outside the five and
// an error outcome without an identifier code.
func checkOutcome(method string, input json.RawMessage) error {
	if t := bytes.TrimSpace(input); len(t) == 0 || string(t) == "null" {
		return fmt.Errorf("%s input is required", method)
	}
	var o callbackOutcome
	if err := envapi.Strict(input, &o); err != nil {
		return fmt.Errorf("%s input: %w", method, err)
	}
	switch o.Status {
	case envapi.StatusOK, envapi.StatusTimeout, envapi.StatusCancelled, envapi.StatusUnknown:
		return nil
	case envapi.StatusError:
		if o.Error == nil || !envapi.ValidIdentifier(o.Error.Code) {
			return fmt.Errorf("%s input: an error outcome needs error.code", method)
		}
		return nil
	}
	return fmt.Errorf("%s input: outcome status %q", method, o.Status)
}
