package tool

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
)

// runAnswer is the JSON object run answers: {"outcome":Outcome} when the
// Tool answered an outcome, {"error":{"message","ref"?}} when it failed.
type runAnswer struct {
	Outcome *api.Outcome `json:"outcome,omitempty"`
	Error   *runError    `json:"error,omitempty"`
}

type runError struct {
	Message string `json:"message"`
	Ref     uint32 `json:"ref,omitempty"`
}

// encodeAnswer encodes the answer of a run that answered o and err.
func encodeAnswer(o api.Outcome, err error) []byte {
	if err == nil {
		b, merr := json.Marshal(runAnswer{Outcome: &o})
		if merr == nil {
			return b
		}
		err = fmt.Errorf("tool: outcome: %w", merr)
	}
	var ref uint32
	var he *HostError
	if errors.As(err, &he) {
		ref = he.Ref
	}
	b, _ := json.Marshal(runAnswer{Error: &runError{Message: err.Error(), Ref: ref}})
	return b
}

// decodeInvocation decodes the invocation run receives.
func decodeInvocation(raw []byte) (Invocation, error) {
	var inv Invocation
	if err := json.Unmarshal(raw, &inv); err != nil {
		return inv, fmt.Errorf("tool: invocation: %w", err)
	}
	return inv, nil
}

// decodeHostError decodes a failed service call's answer.
func decodeHostError(method string, answer []byte) error {
	he := &HostError{}
	if err := json.Unmarshal(answer, he); err != nil {
		return fmt.Errorf("tool: %s: unreadable host error: %w", method, err)
	}
	he.Method = method
	return he
}
