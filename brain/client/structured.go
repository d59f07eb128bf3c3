package client

import (
	"bytes"
	"context"
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
func (s *Session) SendStructured(ctx context.Context, input api.UserInput, schema json.RawMessage, maxRetries int, opts ...StructuredOption) (json.RawMessage, error) {
	sch, err := CompileSchema(schema)
	if err != nil {
		return nil, err
	}
	o := structuredOpts{correct: defaultCorrection}
	for _, fn := range opts {
		fn(&o)
	}
	msg := input
	// The answer is the turn's only if the turn saved the transcript: a
	// loop that saved nothing left the last turn's answer there.
	before, err := s.Transcript(ctx)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if _, err := s.Send(ctx, msg); err != nil {
			return nil, err
		}
		tr, err := s.Transcript(ctx)
		if err != nil {
			return nil, err
		}
		answer, problem := check(sch, tr)
		if reflect.DeepEqual(tr.Messages, before.Messages) {
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
