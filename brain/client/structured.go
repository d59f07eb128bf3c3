package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrStructuredOutput reports that a final answer still did not match its
// JSON Schema after every correction SendStructured was allowed.
var ErrStructuredOutput = errors.New("client: final answer does not match the schema")

// StructuredOption adjusts SendStructured.
type StructuredOption func(*structuredOpts)

type structuredOpts struct {
	correct func(attempt int, problem error) api.UserInput
	key     string
}

// StructuredKey sets the idempotency key of SendStructured (1..256
// bytes), as IdempotencyKey does for Send: the first message is sent with
// it and every correction with a key derived from it and the correction.
// SendStructured called again with the same key, input, schema and kind of
// ctx (see Send) does not run again a turn that was carried out.
func StructuredKey(key string) StructuredOption {
	return func(o *structuredOpts) { o.key = key }
}

// Correction sets the message sent when the answer of attempt (0 for the
// first) does not match the schema. The default quotes the problem and
// asks for a JSON value matching the schema only.
func Correction(fn func(attempt int, problem error) api.UserInput) StructuredOption {
	return func(o *structuredOpts) { o.correct = fn }
}

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it
// names another $schema). References are resolved within the document
// only: nothing is loaded from files or the network.
func CompileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("client: schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "urn:brain:structured-output"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("client: schema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("client: schema: %w", err)
	}
	return s, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %s is not loaded: only references within the schema resolve", url)
}

// SendStructured sends input and validates the turn's final answer (the
// text of the last assistant message of the transcript the turn saved,
// parsed as JSON) against schema. A turn that saved no transcript gave no
// answer.
// While it does not match, and at most maxRetries times, it sends a
// correction message on the same session and validates the new answer.
// It answers the first matching value; after the last failed attempt an
// error wrapping ErrStructuredOutput names the problem. It needs the
// synchronous turn of Send: the correction is part of the caller's work,
// not of the session's.
//
// Every message is sent with an idempotency key: the one StructuredKey
// gives, or one of the client's choosing. When a message's outcome is
// unknown SendStructured fails with an *UncertainError whose Key is that
// key (not the derived key of a correction); SendStructured again with
// StructuredKey(Key) and the same arguments sends no message a second
// time: a message that was carried out is answered with its turn's
// outcome, and the answer validated for it is the last one the session
// saved (whether that turn saved one is not known then).
func (s *Session) SendStructured(ctx context.Context, input api.UserInput, schema json.RawMessage, maxRetries int, opts ...StructuredOption) (json.RawMessage, error) {
	sch, err := CompileSchema(schema)
	if err != nil {
		return nil, err
	}
	o := structuredOpts{correct: defaultCorrection}
	for _, fn := range opts {
		fn(&o)
	}
	if o.key == "" {
		o.key = newKey()
	}
	msg := input
	// The answer is the turn's only if the turn saved the transcript: a
	// loop that saved nothing left the last turn's answer there.
	before, err := s.Transcript(ctx)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		sum, err := s.Send(ctx, msg, IdempotencyKey(attemptKey(o.key, attempt, msg)))
		if ue, ok := errors.AsType[*UncertainError](err); ok {
			return nil, &UncertainError{Key: o.key, Err: ue.Err}
		}
		if err != nil {
			return nil, err
		}
		tr, err := s.Transcript(ctx)
		if err != nil {
			return nil, err
		}
		answer, problem := check(sch, tr)
		// When nothing was recorded since before was read, the message
		// was answered with the outcome of a turn an earlier call with
		// this key ran: whether that turn saved the transcript is not
		// known here (appends are private records), and the answer
		// taken is the last one saved.
		replayed := sum.LastSequence <= before.ThroughSequence
		if !replayed && reflect.DeepEqual(tr.Messages, before.Messages) {
			answer, problem = nil, errors.New("the turn gave no answer: it saved no transcript")
		}
		before = tr
		if problem == nil {
			return answer, nil
		}
		if attempt >= maxRetries {
			return nil, fmt.Errorf("%w after %d attempts: %w", ErrStructuredOutput, attempt+1, problem)
		}
		msg = o.correct(attempt, problem)
	}
}

// attemptKey is the idempotency key of attempt: key for the first
// message, and for a correction a key derived from key, the attempt and
// the message, so that a correction sent again is the same request and a
// different one is another.
func attemptKey(key string, attempt int, msg api.UserInput) string {
	if attempt == 0 {
		return key
	}
	b, _ := json.Marshal(msg)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", key, attempt)
	h.Write(b)
	return "structured-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// check answers the final answer of tr, or why it does not match.
func check(sch *jsonschema.Schema, tr api.SessionTranscript) (json.RawMessage, error) {
	var last *api.Message
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		if tr.Messages[i].Role == api.RoleAssistant {
			last = &tr.Messages[i]
			break
		}
	}
	if last == nil {
		return nil, errors.New("the turn gave no answer")
	}
	text := strings.TrimSpace(last.Text())
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("the answer is not a JSON value: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return nil, fmt.Errorf("the answer does not match the schema: %w", err)
	}
	return json.RawMessage(text), nil
}

func defaultCorrection(_ int, problem error) api.UserInput {
	return api.UserInput{Message: "Your previous answer is not valid: " + problem.Error() +
		". Answer again with only a JSON value that matches the required JSON Schema, and nothing else."}
}
