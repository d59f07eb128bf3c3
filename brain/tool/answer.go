package tool

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestabi"
	"github.com/brain-in-go/brain/brain/internal/guestjson"
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
		e := guestjson.NewEncoder(80 + len(o.Value) + len(o.Content))
		e.B = append(e.B, `{"outcome":`...)
		e.Outcome(&o)
		if e.Err == nil {
			return append(e.B, '}')
		}
		err = fmt.Errorf("tool: outcome: %w", e.Err)
	}
	var ref uint32
	var he *HostError
	if errors.As(err, &he) {
		ref = he.Ref
	}
	// The host records no more of the message than this; a longer one
	// could push the answer past what the host reads, losing its code.
	msg := guestabi.ClipMessage(err.Error())
	e := guestjson.NewEncoder(48 + len(msg))
	e.B = append(e.B, `{"error":{"message":`...)
	e.Str(msg)
	if ref > 0 {
		e.B = append(e.B, `,"ref":`...)
		e.Uint(uint64(ref))
	}
	return append(e.B, "}}"...)
}

// decodeInvocation decodes the invocation run receives as json.Unmarshal
// would decode it into a map (member names exact); the values share raw's
// bytes.
func decodeInvocation(raw []byte) (Invocation, error) {
	var inv Invocation
	d := guestjson.Decoder{Data: raw}
	if d.Peek() != '{' {
		d.Fail("want an object")
	}
	d.Members(func(name string) {
		switch name {
		case "input":
			inv.Input = d.Raw()
		case "configuration":
			inv.Configuration = d.Raw()
		case "deadline_at_ms":
			inv.DeadlineAtMs = d.Int()
		default:
			d.Skip()
		}
	})
	if err := d.End(); err != nil {
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
