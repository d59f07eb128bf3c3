package loophost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"unicode/utf8"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxRefusalMessage bounds the message of a refused answer: the prefix
// naming the module and at most maxAnswerErrorPart of the decoder's words
// and what they quote.
const maxRefusalMessage = 512

// FuzzEntrypointAnswers feeds any bytes to the decoders of what turn and
// run answer. Never a panic. A refused turn answer is an error of bounded
// length that is neither a *GuestError nor any failed service call's
// (agentloop_failed); a refused run answer is the failure invalid_output.
// A guest's failure keeps a bounded UTF-8 message and the service call
// error its ref names; what is accepted answers the same when encoded
// again.
func FuzzEntrypointAnswers(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"result":{"a":[1,2]}}`, `{"result":null}`, `{"error":{"message":"no","ref":1}}`,
		`{"error":{"message":"","ref":3}}`, `{"error":{"message":"x"},"result":1}`, `{"result":1}}`,
		`{"outcome":{"status":"ok","value":1}}`, `{"error":{"message":"m","ref":2}}`,
		`{"outcome":1,"error":{"message":"m"}}`, `{"OUTCOME":1}`, `{"outcome":null}`,
		`{"error":{"message":"m","ref":-1}}`, `{"x":1}`, "{\"result\":\"\xff\"}", `[]`, `null`, ``,
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	errs := []error{
		fmt.Errorf("model: %w", session.ErrModelCallLimit),
		fmt.Errorf("emit: %w", session.ErrNotGranted),
	}
	f.Fuzz(func(t *testing.T, tool bool, doc []byte) {
		if tool {
			checkRunAnswer(t, doc, errs)
		} else {
			checkTurnAnswer(t, doc, errs)
		}
	})
}

func checkTurnAnswer(t *testing.T, doc []byte, errs []error) {
	out, err := decodeTurnAnswer("loop", doc, refusalsOf(errs))
	var ge *GuestError
	switch {
	case err == nil:
		if out.Result != nil && (!json.Valid(out.Result) || !utf8.Valid(out.Result)) {
			t.Fatalf("turn answer %q accepted with result %q", doc, out.Result)
		}
		again := marshalAsIs(t, turnAnswer{Result: out.Result})
		if o, err := decodeTurnAnswer("loop", again, refusalsOf(errs)); err != nil || !sameJSON(o.Result, out.Result) {
			t.Fatalf("turn answer %q: result %q encoded again as %s answers %q, %v", doc, out.Result, again, o.Result, err)
		}
	case errors.As(err, &ge):
		if ge.Message == "" || len(ge.Message) > maxErrorMessage || !utf8.ValidString(ge.Message) {
			t.Fatalf("turn answer %q: guest error with message %q", doc, ge.Message)
		}
		ref := uint32(0)
		for i, e := range errs {
			if ge.Err == e {
				ref = uint32(i + 1)
			}
		}
		if ge.Err != nil && ref == 0 {
			t.Fatalf("turn answer %q: guest error wraps %v, no service call's", doc, ge.Err)
		}
		again, _ := json.Marshal(turnAnswer{Error: &guestError{Message: ge.Message, Ref: ref}})
		var ge2 *GuestError
		if _, err := decodeTurnAnswer("loop", again, refusalsOf(errs)); !errors.As(err, &ge2) || ge2.Message != ge.Message || ge2.Err != ge.Err {
			t.Fatalf("turn answer %q: failure encoded again as %s answers %v", doc, again, err)
		}
	default:
		if len(err.Error()) > maxRefusalMessage || !utf8.ValidString(err.Error()) {
			t.Fatalf("turn answer %q refused with a message of %d bytes: %.300q", doc, len(err.Error()), err.Error())
		}
		for _, e := range errs {
			if errors.Is(err, e) {
				t.Fatalf("turn answer %q refused as the service call error %v", doc, e)
			}
		}
	}
}

// marshalAsIs encodes v as a guest would, without escaping <, > and &
// (encoding/json's HTML escaping is a choice of the encoder, not of JSON).
func marshalAsIs(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// sameJSON reports whether a and b are the same JSON text but for white
// space between tokens (an answer's values are kept as written; encoding
// one again compacts it).
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func checkRunAnswer(t *testing.T, doc []byte, errs []error) {
	r := decodeRunAnswer("tool", doc, refusalsOf(errs), nil)
	switch r.Type {
	case envapi.ReceiptResult:
		if !json.Valid(r.Output) || !utf8.Valid(r.Output) {
			t.Fatalf("run answer %q accepted with output %q", doc, r.Output)
		}
		again := marshalAsIs(t, runAnswer{Outcome: r.Output})
		if r2 := decodeRunAnswer("tool", again, refusalsOf(errs), nil); r2.Type != envapi.ReceiptResult || !sameJSON(r2.Output, r.Output) {
			t.Fatalf("run answer %q: output %q encoded again as %s answers %+v", doc, r.Output, again, r2)
		}
	case envapi.ReceiptFailure:
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("run answer %q: failure %+v does not encode: %v", doc, r, err)
		}
		if _, err := envapi.DecodeReceipt(raw); err != nil {
			t.Fatalf("run answer %q: failure %s is not a receipt: %v", doc, raw, err)
		}
		if r.Message == "" || !utf8.ValidString(r.Message) {
			t.Fatalf("run answer %q: failure with message %q", doc, r.Message)
		}
		ref := uint32(0)
		switch r.Code {
		case envapi.CodeInvalidOutput:
			if len(r.Message) > maxRefusalMessage {
				t.Fatalf("run answer %q refused with a message of %d bytes", doc, len(r.Message))
			}
			return
		case brainapi.FailureToolError:
		default:
			for i, e := range errs {
				if session.APIError(e).Code == r.Code {
					ref = uint32(i + 1)
				}
			}
			if ref == 0 {
				t.Fatalf("run answer %q: failure %s, no service call's code", doc, r.Code)
			}
		}
		again, _ := json.Marshal(runAnswer{Error: &guestError{Message: r.Message, Ref: ref}})
		if r2 := decodeRunAnswer("tool", again, refusalsOf(errs), nil); r2.Type != r.Type || r2.Code != r.Code || r2.Message != r.Message {
			t.Fatalf("run answer %q: failure encoded again as %s answers %+v", doc, again, r2)
		}
	default:
		t.Fatalf("run answer %q answered a %s receipt", doc, r.Type)
	}
}

// refusalsOf answers errs as an activation's failed service calls: errs[i]
// has ref i+1.
func refusalsOf(errs []error) *refusals {
	r := &refusals{}
	for _, e := range errs {
		r.add(e)
	}
	return r
}
