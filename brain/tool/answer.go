package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
)

// runAnswer is the JSON object run answers (decoded by the tests): {"outcome":Outcome} when the
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
		b, oerr := appendOutcome(append(make([]byte, 0, 80+len(o.Value)+len(o.Content)), `{"outcome":`...), &o)
		if oerr == nil {
			return append(b, '}')
		}
		err = fmt.Errorf("tool: outcome: %w", oerr)
	}
	var ref uint32
	var he *HostError
	if errors.As(err, &he) {
		ref = he.Ref
	}
	b := appendString(append(make([]byte, 0, 48+len(err.Error())), `{"error":{"message":`...), err.Error())
	if ref > 0 {
		b = strconv.AppendUint(append(b, `,"ref":`...), uint64(ref), 10)
	}
	return append(b, "}}"...)
}

// decodeInvocation decodes the invocation run receives; the values share
// raw's bytes.
func decodeInvocation(raw []byte) (Invocation, error) {
	var inv Invocation
	s := scanner{b: raw}
	s.object(func(key string) {
		v := s.value()
		switch key {
		case "input":
			inv.Input = v
		case "configuration":
			inv.Configuration = v
		case "deadline_at_ms":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil && s.err == nil {
				s.fail("deadline_at_ms is not an integer")
			}
			inv.DeadlineAtMs = n
		}
	})
	if err := s.end(); err != nil {
		return Invocation{}, fmt.Errorf("tool: invocation: %w", err)
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
