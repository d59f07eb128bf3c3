package loophost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// guestError is the "error" member of an entrypoint's answer.
type guestError struct {
	Message string `json:"message"`
	Ref     uint32 `json:"ref,omitempty"`
}

// turnAnswer is the JSON object turn answers.
type turnAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *guestError     `json:"error,omitempty"`
}

// runAnswer is the JSON object run answers.
type runAnswer struct {
	Outcome json.RawMessage `json:"outcome,omitempty"`
	Error   *guestError     `json:"error,omitempty"`
}

// maxAnswerErrorPart bounds what the error of a refused answer quotes of
// it (encoding/json quotes a member name or a number whole): the error is
// recorded as the activation's failure.
const maxAnswerErrorPart = 256

// errNotUTF8 refuses an answer that is not UTF-8.
var errNotUTF8 = errors.New("not valid UTF-8")

// decodeAnswer decodes doc, a whole UTF-8 JSON object (not null) without
// unknown, repeated or differently cased members, into v.
func decodeAnswer(doc []byte, v any) error {
	if !utf8.Valid(doc) {
		return errNotUTF8
	}
	// encoding/json reads null into a struct as nothing at all: an
	// answer that is null would read as an empty object.
	if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return &answerError{errors.New("not a JSON object")}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &answerError{err}
	}
	// More would take a stray closing bracket for the end of the input.
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	// encoding/json keeps the last of repeated members and matches names
	// without regard to case: an answer is read exactly as written.
	if _, key, dup, misnamed := envapi.StrictMembers(doc, v); dup || misnamed {
		return &answerError{fmt.Errorf("member %.64q repeated or not named exactly", key)}
	}
	return nil
}

// answerError is a decoding error of an answer, its message bounded.
type answerError struct{ err error }

func (e *answerError) Error() string {
	s := e.err.Error()
	if len(s) <= maxAnswerErrorPart {
		return s
	}
	return clip(s, maxAnswerErrorPart) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

func (e *answerError) Unwrap() error { return e.err }

// decodeTurnAnswer reads the answer doc of turn of the agentloop id: the
// activation's output, or a *GuestError (wrapping the service call error
// of errs its ref names). Any other answer fails the activation with an
// error of bounded length, which the engine records as agentloop_failed.
func decodeTurnAnswer(id string, doc []byte, errs *refusals) (brainapi.TurnOutput, error) {
	var out brainapi.TurnOutput
	var ans turnAnswer
	if err := decodeAnswer(doc, &ans); err != nil {
		return out, fmt.Errorf("agentloop %s: invalid turn answer: %w", short(id), err)
	}
	if e := ans.Error; e != nil {
		if ans.Result != nil {
			return out, fmt.Errorf("agentloop %s: invalid turn answer: both result and error", short(id))
		}
		ge := &GuestError{Message: e.Message}
		ge.Err = errs.get(e.Ref)
		if ge.Message == "" {
			ge.Message = "agentloop failed"
		}
		// The message is the guest's: bounded as a tool's is, so that
		// the failure records stay small enough to commit.
		ge.Message = clip(ge.Message, maxErrorMessage)
		return out, ge
	}
	out.Result = bytes.Clone(ans.Result)
	return out, nil
}

// decodeRunAnswer reads the answer doc of run of the Tool id into its
// receipt: result with the outcome, or failure tool_error (or the code of
// the refused service call of errs its ref names) with the guest's
// message. Any other answer is the failure invalid_output.
func decodeRunAnswer(id string, doc []byte, errs *refusals, hide hidden) envapi.Receipt {
	var ans runAnswer
	if err := decodeAnswer(doc, &ans); err != nil || (ans.Outcome == nil) == (ans.Error == nil) {
		msg := fmt.Sprintf("tool %s: invalid run answer", short(id))
		if errors.Is(err, errNotUTF8) {
			msg += ": " + err.Error()
		}
		return envapi.Failure(envapi.CodeInvalidOutput, msg, false, nil)
	}
	if e := ans.Error; e != nil {
		code, retryable := brainapi.FailureToolError, false
		var details json.RawMessage
		if err := errs.get(e.Ref); err != nil {
			ae := session.APIError(err)
			code, retryable, details = ae.Code, ae.Retryable, ae.Details
		}
		msg := e.Message
		if msg == "" {
			msg = "tool failed"
		}
		// The guest's SDK sends at most maxErrorMessage bytes, cut
		// between characters: a message that long may end in part of a
		// secret.
		cut := len(msg) > maxErrorMessage-utf8.UTFMax
		return envapi.Failure(code, hide.clip(msg, maxErrorMessage, cut), retryable, details)
	}
	return envapi.Result(bytes.Clone(ans.Outcome))
}
