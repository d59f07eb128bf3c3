package envsdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// The decoders of Brain's answers to callback calls. The bytes are the
// network's (or whatever the grant URL reaches): an answer that is not
// what the method answers is an error, never a value read from it, and
// the error quotes at most 64 characters of it.

// maxCauseLen bounds the decoder's words in an answer error: encoding/json
// quotes a member name or a number whole.
const maxCauseLen = 256

// answerError is an answer of method that is not what it answers.
type answerError struct {
	method string
	raw    []byte
	want   string
	err    error
}

func (e *answerError) Error() string {
	s := fmt.Sprintf("envsdk: %s answered %.64q, want %s", e.method, e.raw, e.want)
	if e.err != nil {
		cause := e.err.Error()
		if len(cause) > maxCauseLen {
			cause = cutCause(cause)
		}
		s += ": " + cause
	}
	return s
}

// Unwrap answers ErrMalformedAnswer and the decoder's error, if any.
func (e *answerError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrMalformedAnswer}
	}
	return []error{ErrMalformedAnswer, e.err}
}

// cutCause cuts s to maxCauseLen bytes on a rune boundary, saying how long
// it was.
func cutCause(s string) string {
	n := maxCauseLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// checkJSON answers raw when it is one UTF-8 JSON value: every method
// answers JSON.
func checkJSON(method string, raw []byte) (json.RawMessage, error) {
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, &answerError{method: method, raw: raw, want: "one UTF-8 JSON value"}
	}
	return raw, nil
}

// parseSequence reads a committed sequence: a positive JSON integer,
// optionally between JSON white space.
func parseSequence(method string, raw []byte) (uint64, error) {
	s := trimJSONSpace(raw)
	n, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil || n == 0 || s[0] == '0' {
		return 0, &answerError{method: method, raw: raw, want: "a committed sequence"}
	}
	return n, nil
}

// trimJSONSpace trims the white space of JSON (RFC 8259) around b.
func trimJSONSpace(b []byte) []byte {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && space(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && space(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// decodeToolReturns reads the answer of dispatch: one ToolReturn per call,
// in call order.
func decodeToolReturns(raw []byte, calls []envapi.ToolInvocation) ([]envapi.ToolReturn, error) {
	const want = "one ToolReturn per call, in call order"
	var out []envapi.ToolReturn
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		return nil, &answerError{method: envapi.MethodDispatch, raw: raw, want: want, err: err}
	}
	if len(out) != len(calls) {
		return nil, &answerError{method: envapi.MethodDispatch, raw: raw, want: want,
			err: fmt.Errorf("%d returns for %d calls", len(out), len(calls))}
	}
	for i, r := range out {
		if r.CallID != calls[i].CallID || r.Sequence == 0 {
			return nil, &answerError{method: envapi.MethodDispatch, raw: raw, want: want,
				err: fmt.Errorf("return %d is call_id %.64q, sequence %d, for call_id %.64q", i, r.CallID, r.Sequence, calls[i].CallID)}
		}
	}
	return out, nil
}

// decodeKVRead reads the answer of kv_read: {} for an absent key,
// {"value": V} for a present one (V may be null).
func decodeKVRead(raw []byte) (value json.RawMessage, found bool, err error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return nil, false, &answerError{method: envapi.MethodKVRead, raw: raw, want: `{} or {"value": V}`, err: err}
	}
	value, found = v["value"]
	return value, found, nil
}

// decodeReporterAnswer reads the answer of a reporter post:
// {"sequence": N}, N positive.
func decodeReporterAnswer(raw []byte) (uint64, error) {
	var ans struct {
		Sequence uint64 `json:"sequence"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Sequence == 0 {
		return 0, &answerError{method: "reporter", raw: raw, want: `{"sequence": N}`}
	}
	return ans.Sequence, nil
}
