package envapi

import (
	"encoding/json"
	"strconv"
	"strings"
)

// MaxResponseBytes is the bound Brain puts on a provider's answer to one
// operation unless its operator sets another
// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES): a larger answer is an invalid
// receipt.
const MaxResponseBytes = 32 << 20

// MaxCallBytes is the bound Brain puts on the body of a call to one of its
// services (a callback, controller context or reporter call) unless its
// operator sets another (BRAIN_MAX_REQUEST_BYTES): a larger body is
// refused (413) unread, and nothing of it is committed.
const MaxCallBytes = 32 << 20

// minQuotedInIdentifier is the length from which a secret is looked for
// inside an identifier; a shorter one (a development credential such as
// "token") is also a word a failure code may hold, so only an identifier
// that is the secret itself quotes it.
const minQuotedInIdentifier = 16

// CheckResponse reports whether r, decoded from a provider's answer to op,
// is one Brain takes. It must name op's sequence; an identifier of its
// receipt (a failure's code, a setup's on_turn_end) must not quote one of
// secrets (the credential and the tokens the command carried), since an
// identifier cannot be redacted; and setup, detach, teardown and cancel,
// which have no output, are answered accepted, failure or unknown. The
// error is a *FieldError that quotes none of secrets; Brain records such an
// answer as an invalid receipt (the outcome is unknown).
func CheckResponse(op Operation, r Response, secrets ...string) error {
	if r.Sequence != op.Sequence {
		return &FieldError{Field: "sequence", Reason: "names sequence " + strconv.FormatUint(r.Sequence, 10) +
			", not the operation's " + strconv.FormatUint(op.Sequence, 10)}
	}
	if f := quotingIdentifier(r.Receipt, secrets); f != "" {
		return &FieldError{Field: "receipt." + f, Reason: "quotes a credential or token the operation carried"}
	}
	if !Answers(op.Request.Type, r.Receipt.Type) {
		return &FieldError{Field: "receipt.type", Reason: "a " + string(op.Request.Type) +
			" is answered accepted, failure or unknown, not " + string(r.Receipt.Type)}
	}
	return nil
}

// Tokens answers the tokens op carries: its callback's, its controller
// context's and its reporter's, those it has. With the provider's
// credential they are the secrets CheckResponse looks for.
func (op Operation) Tokens() []string {
	var out []string
	for _, g := range []*Grant{op.Request.Callback, op.Context, op.Reporter} {
		if g != nil && g.Token != "" {
			out = append(out, g.Token)
		}
	}
	return out
}

// Answers reports whether a receipt of type k answers a request of type t.
// Setup, detach, teardown and cancel have no output: they succeed with
// accepted, and progress, result or returned would say nothing of whether
// they were done. Executes and calls take every type.
func Answers(t RequestType, k ReceiptType) bool {
	switch t {
	case RequestSetup, RequestDetach, RequestTeardown, RequestCancel:
		return k == ReceiptAccepted || k == ReceiptFailure || k == ReceiptUnknown
	}
	return true
}

// quotingIdentifier names the identifier field of rc that holds one of
// secrets, or answers "".
func quotingIdentifier(rc Receipt, secrets []string) string {
	for _, f := range []struct{ name, value string }{{"code", rc.Code}, {"on_turn_end", rc.OnTurnEnd}} {
		for _, v := range secrets {
			if v != "" && (f.value == v || len(v) >= minQuotedInIdentifier && strings.Contains(f.value, v)) {
				return f.name
			}
		}
	}
	return ""
}

// ToolOutput reads the output of a Tool's result or returned receipt as
// Brain records it. An object with a top-level "status" is a ToolOutput
// envelope (status is reserved there), and a malformed one is an error
// outcome with code invalid_output; any other value is the Tool's ok
// value, as envsdk providers send it.
func ToolOutput(raw json.RawMessage) Outcome {
	var head map[string]json.RawMessage
	if json.Unmarshal(raw, &head) != nil || head["status"] == nil {
		return OK(raw)
	}
	o, err := DecodeOutcome(raw)
	if err != nil {
		return ErrorOutcome(CodeInvalidOutput, "malformed tool output: "+err.Error(), false, nil)
	}
	return o
}

// ToolOutcome answers the outcome Brain records for a Tool whose execute
// was answered r. A result is its output read by ToolOutput; a failure
// with code timeout or cancelled is that status, any other failure an
// error outcome with the failure's code, message, retryable and details;
// unknown is unknown with its message; accepted and progress, which carry
// no result, are unknown. A returned receipt does not close the Tool (it
// is finished later through its callback): closed is false and the outcome
// is that of the output, the zero Outcome when there is none.
func ToolOutcome(r Receipt) (o Outcome, closed bool) {
	switch r.Type {
	case ReceiptResult:
		return ToolOutput(r.Output), true
	case ReceiptReturned:
		if len(r.Output) == 0 || string(r.Output) == "null" {
			return Outcome{}, false
		}
		return ToolOutput(r.Output), false
	case ReceiptFailure:
		switch r.Code {
		case CodeTimeout:
			return Outcome{Status: StatusTimeout}, true
		case CodeCancelled:
			return Outcome{Status: StatusCancelled}, true
		}
		return ErrorOutcome(r.Code, r.Message, r.Retryable, r.Details), true
	case ReceiptUnknown:
		return UnknownOutcome(r.Message), true
	}
	return UnknownOutcome("environment answered " + string(r.Type) + " without a result"), true
}
