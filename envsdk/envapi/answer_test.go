package envapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A Tool's execute is read as Brain records its outcome: a plain value is
// an ok value, a ToolOutput envelope is decoded and a malformed one is
// invalid_output; a timeout or cancelled failure is that status; a
// returned receipt leaves the Tool open; accepted and progress are
// unknown.
func TestToolOutcome(t *testing.T) {
	for _, tc := range []struct {
		r      Receipt
		status OutcomeStatus
		code   string
		closed bool
	}{
		{Result(json.RawMessage(`{"x":1}`)), StatusOK, "", true},
		{Result(json.RawMessage(`{"status":"error","error":{"code":"boom","message":"m","retryable":false}}`)), StatusError, "boom", true},
		{Result(json.RawMessage(`{"status":"fine"}`)), StatusError, CodeInvalidOutput, true},
		{Result(json.RawMessage(`{"status":"ok","value":1,"extra":1}`)), StatusError, CodeInvalidOutput, true},
		{Returned(nil), "", "", false},
		{Returned(json.RawMessage(`{"status":"ok","value":2}`)), StatusOK, "", false},
		{Failure(CodeTimeout, "late", false, nil), StatusTimeout, "", true},
		{Failure(CodeCancelled, "stopped", false, nil), StatusCancelled, "", true},
		{Failure("busy", "m", true, nil), StatusError, "busy", true},
		{Unknown("lost"), StatusUnknown, "", true},
		{Accepted(), StatusUnknown, "", true},
		{Progress(json.RawMessage(`1`)), StatusUnknown, "", true},
	} {
		o, closed := ToolOutcome(tc.r)
		code := ""
		if o.Error != nil {
			code = o.Error.Code
		}
		if o.Status != tc.status || code != tc.code || closed != tc.closed {
			t.Errorf("%s %s: outcome %s %q closed %v, want %s %q closed %v", tc.r.Type, tc.r.Output, o.Status, code, closed, tc.status, tc.code, tc.closed)
		}
	}
}

// CheckResponse refuses an answer that names another sequence, a receipt
// a setup, detach, teardown or cancel does not take, and an identifier
// quoting a secret, without quoting the secret.
func TestCheckResponse(t *testing.T) {
	const secret = "sekrit_token_0123456789"
	op := func(seq uint64, req Request) Operation {
		return Operation{SessionID: "s", Environment: "e", Sequence: seq, Request: req}
	}
	for _, tc := range []struct {
		op    Operation
		r     Response
		field string
	}{
		{op(3, Execute(nil, nil, nil, nil)), NewResponse(3, Progress(json.RawMessage(`1`))), ""},
		{op(3, Call("m", nil)), NewResponse(3, Returned(nil)), ""},
		{op(3, Setup(nil)), NewResponse(3, AcceptedOnTurnEnd("cleanup")), ""},
		{op(3, Setup(nil)), NewResponse(3, Failure("short", "m", false, nil)), ""}, // "short" is a secret below, too short to look for
		{op(3, Execute(nil, nil, nil, nil)), NewResponse(4, Result(nil)), "sequence"},
		{op(3, Teardown()), NewResponse(3, Result(nil)), "receipt.type"},
		{op(3, Cancel(2)), NewResponse(3, Progress(nil)), "receipt.type"},
		{op(3, Execute(nil, nil, nil, nil)), NewResponse(3, Failure("x"+secret, "m", false, nil)), "receipt.code"},
		{op(3, Setup(nil)), NewResponse(3, AcceptedOnTurnEnd(secret)), "receipt.on_turn_end"},
		{op(3, Setup(nil)), NewResponse(3, Failure("shor", "m", false, nil)), "receipt.code"},
	} {
		err := CheckResponse(tc.op, tc.r, secret, "shor")
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s answered %s: %v, want it taken", tc.op.Request.Type, tc.r.Receipt.Type, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s answered %s: %v, want a refusal naming %s", tc.op.Request.Type, tc.r.Receipt.Type, err, tc.field)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("the refusal %q quotes the secret", err)
		}
	}
}
