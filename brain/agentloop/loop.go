package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestjson"
)

// DefaultMaxSteps bounds the model calls of one activation of the default
// loop unless its configuration sets "max_steps".
const DefaultMaxSteps = 64

// Errors of the default loop.
var (
	ErrStepBudget = errors.New("agentloop: step budget exhausted")
	// ErrConfiguration fails an activation whose configuration the
	// default loop refuses; the message names the field.
	ErrConfiguration = errors.New("agentloop: invalid configuration")
)

// Configuration is the default loop's configuration.
type Configuration struct {
	// MaxSteps bounds the model calls of one activation; zero (or
	// absent) selects DefaultMaxSteps. A negative value is refused
	// (ErrConfiguration): no model is called. Brain refuses a session of
	// the built-in loop so configured at create (ParseConfiguration).
	MaxSteps int `json:"max_steps,omitempty"`
}

// ConfigurationError is a configuration the default loop refuses; it
// wraps ErrConfiguration.
type ConfigurationError struct {
	// Reason names the member at fault (none when the configuration as a
	// whole is) and says what is wrong with it.
	Reason string
}

func (e *ConfigurationError) Error() string { return ErrConfiguration.Error() + ": " + e.Reason }

// Unwrap answers ErrConfiguration.
func (e *ConfigurationError) Unwrap() error { return ErrConfiguration }

// ParseConfiguration reads the default loop's configuration as Default
// does: absent or null is the zero Configuration, members it does not
// know are ignored. A configuration Default refuses (not a JSON object,
// max_steps not an integer or negative) answers a *ConfigurationError, so
// that a caller holding the configuration before any turn runs can refuse
// it as Default would.
func ParseConfiguration(raw json.RawMessage) (Configuration, error) {
	var conf Configuration
	if len(raw) == 0 || string(raw) == "null" {
		return conf, nil
	}
	d := newDecoder(raw)
	d.configuration(&conf)
	if err := d.End(); err != nil {
		return Configuration{}, &ConfigurationError{Reason: err.Error()}
	}
	if conf.MaxSteps < 0 {
		return Configuration{}, &ConfigurationError{Reason: fmt.Sprintf("max_steps must be at least 1 (or 0 for the default of %d), got %d", DefaultMaxSteps, conf.MaxSteps)}
	}
	return conf, nil
}

// Default is the built-in loop: it calls the model with the transcript plus
// the user message, dispatches the tool calls the model asks for in one
// parallel dispatch, appends tool_use and tool_result blocks, feeds the
// results back, and stops on a final answer or its step budget. A call
// naming none of the activation's tools is not dispatched: its tool_result
// is an error outcome (code not_found) naming the tools there are, and the
// model is asked again, as after a tool that failed. It saves the
// transcript with set_transcript and returns the final text as result.
// It appends to in.Transcript as append does: a caller that passes spare
// capacity lends it to the loop for the call, and gets the turn's messages
// there without a copy of the transcript.
//
// Finished background tools in the activation's event batch become a user
// note ahead of the user's message; an event-triggered activation (no
// input) sends that note alone and asks the model again.
func Default(ctx context.Context, svc Services, in api.TurnInput) (api.TurnOutput, error) {
	conf, err := ParseConfiguration(in.Configuration)
	if err != nil {
		return api.TurnOutput{}, err
	}
	if conf.MaxSteps == 0 {
		conf.MaxSteps = DefaultMaxSteps
	}
	msgs := in.Transcript
	// Background results in the event batch come first: a successful
	// return completes the batch, also in a turn started by a message.
	note, ok := backgroundNote(in.Events)
	if ok {
		msgs = append(msgs, api.Message{Role: api.RoleUser, Content: []api.ContentBlock{api.TextBlock(note)}})
	}
	switch {
	case in.Input != nil:
		msgs = append(msgs, api.UserMessage(*in.Input))
	case !ok:
		return api.TurnOutput{}, nil
	}
	tools := toolsOf(in.Tools)
	// A turn that fails after it dispatched tools still saves what they
	// did (without the background note: the batch stays pending and comes
	// again), so that the next turn's model sees the calls made, not a
	// conversation in which they never happened.
	noteAt := -1
	if ok {
		noteAt = len(in.Transcript)
	}
	dispatched := false
	failed := func(err error) (api.TurnOutput, error) {
		if dispatched {
			_, _ = svc.SetTranscript(ctx, withoutNote(msgs, noteAt))
		}
		return api.TurnOutput{}, err
	}
	var final api.Message
	for step := 0; ; step++ {
		if step == conf.MaxSteps {
			return failed(ErrStepBudget)
		}
		res, err := svc.Model(ctx, api.ModelRequest{Messages: msgs})
		if err != nil {
			return failed(err)
		}
		msgs = append(msgs, res.Message)
		final = res.Message
		uses := toolUses(res.Message)
		if res.StopReason != api.StopToolUse || len(uses) == 0 {
			break
		}
		results, sent, err := runTools(ctx, svc, uses, tools)
		dispatched = dispatched || sent
		// On a failed dispatch the results answer the calls it held with
		// the failure (they may have run), so that the saved transcript
		// stays well formed.
		msgs = append(msgs, api.Message{Role: api.RoleUser, Content: results})
		if err != nil {
			return failed(err)
		}
	}
	if _, err := svc.SetTranscript(ctx, msgs); err != nil {
		return api.TurnOutput{}, err
	}
	return api.TurnOutput{Result: guestjson.MarshalString(final.Text())}, nil
}

// withoutNote answers msgs without the message at i (none when i < 0), in
// a slice of its own.
func withoutNote(msgs []api.Message, i int) []api.Message {
	if i < 0 {
		return msgs
	}
	out := make([]api.Message, 0, len(msgs)-1)
	return append(append(out, msgs[:i]...), msgs[i+1:]...)
}

// dispatchFailed is the content of the error result of each call of a
// dispatch that failed: its outcome is unknown.
func dispatchFailed(err error) json.RawMessage {
	e := newEncoder(64)
	e.B = append(e.B, `{"status":"unknown","message":`...)
	e.Str("the dispatch failed: " + err.Error())
	e.B = append(e.B, '}')
	return e.B
}

// toolSet is the activation's tools: each name with the environment its
// calls go to, and the names in their order.
type toolSet struct {
	env   map[string]string
	names []string
}

func toolsOf(tools []api.ActivationTool) toolSet {
	s := toolSet{env: make(map[string]string, len(tools)), names: make([]string, 0, len(tools))}
	for _, t := range tools {
		env := ""
		if len(t.Environments) > 0 {
			env = t.Environments[0]
		}
		if _, ok := s.env[t.Name]; !ok {
			s.names = append(s.names, t.Name)
		}
		s.env[t.Name] = env
	}
	return s
}

// unknownTool is the content of the error result of a call that names
// none of the tools: an error outcome (code not_found) naming the tool
// and the tools there are, so that the model can call one of them.
func (s toolSet) unknownTool(name string) json.RawMessage {
	msg := "there is no tool named " + strconv.Quote(name)
	if len(s.names) == 0 {
		msg += ": no tools are available"
	} else {
		msg += "; the tools are: " + strings.Join(s.names, ", ")
	}
	e := newEncoder(len(msg) + 80)
	e.Outcome(&api.Outcome{Status: api.OutcomeFailed, Error: &api.OutcomeError{Code: api.CodeNotFound, Message: msg}})
	return e.B
}

func toolUses(m api.Message) []api.ContentBlock {
	var uses []api.ContentBlock
	for _, b := range m.Content {
		if b.Type == api.BlockToolUse {
			uses = append(uses, b)
		}
	}
	return uses
}

// runTools dispatches, in one call, every tool_use that names one of the
// activation's tools, and answers the tool_result blocks of all of them in
// the order of uses, and whether a dispatch was made. A tool_use naming
// no such tool is not dispatched (the session would refuse the whole
// dispatch): its result is an error naming the tool, as a failed call's
// would be. When the dispatch fails, the calls it held are answered with
// its failure, and the error is returned with the blocks.
func runTools(ctx context.Context, svc Services, uses []api.ContentBlock, tools toolSet) ([]api.ContentBlock, bool, error) {
	blocks := make([]api.ContentBlock, len(uses))
	calls := make([]api.ToolInvocation, 0, len(uses))
	at := make([]int, 0, len(uses)) // the index in uses of each call
	for i, u := range uses {
		env, ok := tools.env[u.Name]
		if !ok {
			blocks[i] = api.ToolResultBlock(u.ID, tools.unknownTool(u.Name), true)
			continue
		}
		input := u.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		calls = append(calls, api.ToolInvocation{CallID: u.ID, Name: u.Name, Environment: env, Input: input})
		at = append(at, i)
	}
	if len(calls) == 0 {
		return blocks, false, nil
	}
	returns, err := svc.Dispatch(ctx, calls)
	if err != nil {
		content := dispatchFailed(err)
		for _, i := range at {
			blocks[i] = api.ToolResultBlock(uses[i].ID, content, true)
		}
		return blocks, true, err
	}
	byID := make(map[string]api.ToolReturn, len(returns))
	for _, r := range returns {
		byID[r.CallID] = r
	}
	for _, i := range at {
		content, isErr := resultContent(byID[uses[i].ID])
		blocks[i] = api.ToolResultBlock(uses[i].ID, content, isErr)
	}
	return blocks, true, nil
}

// resultContent turns a ToolReturn into tool_result content: the value of
// an ok outcome, the outcome itself otherwise, or a pending note for a tool
// that returned without finishing, with the output it gave so far (the
// outcome of its returned, or else the last result it emitted), if any.
func resultContent(r api.ToolReturn) (json.RawMessage, bool) {
	var sofar *api.Outcome
	for _, ev := range r.Events {
		switch ev.EventType {
		case api.KindToolCallEnded:
			var end api.ToolCallEnded
			// A copy: the decoded values share the decoder's input.
			d := newDecoder(bytes.Clone(ev.Data))
			d.toolCallEnded(&end)
			if err := d.End(); err != nil {
				return json.RawMessage(`{"status":"unknown","message":"unreadable outcome"}`), true
			}
			return outcomeContent(&end.Outcome)
		case api.KindToolCallReturned, api.KindToolResultEmitted:
			d := newDecoder(bytes.Clone(ev.Data))
			o := d.phaseOutcome()
			if d.End() == nil && o != nil {
				sofar = o
			}
		}
	}
	if r.Sequence == 0 {
		return json.RawMessage(`{"status":"error","error":{"code":"tool_error","message":"no return"}}`), true
	}
	if !r.Finished {
		b := strconv.AppendUint([]byte(`{"sequence":`), r.Sequence, 10)
		b = append(b, `,"status":"pending"`...)
		isErr := false
		if sofar != nil {
			var out json.RawMessage
			out, isErr = outcomeContent(sofar)
			b = append(append(b, `,"output":`...), out...)
		}
		return append(b, '}'), isErr
	}
	return json.RawMessage(`{"status":"unknown","message":"no outcome recorded"}`), true
}

// outcomeContent is the tool_result content of an outcome: the content or
// value of an ok one, the envelope of any other.
func outcomeContent(o *api.Outcome) (json.RawMessage, bool) {
	if !o.IsError() {
		if len(o.Content) > 0 {
			return o.Content, false
		}
		if len(o.Value) == 0 {
			return json.RawMessage("null"), false
		}
		return o.Value, false
	}
	e := newEncoder(len(o.Value) + len(o.Content) + len(o.Message) + 64)
	e.Outcome(o)
	return e.B, true
}

// backgroundNote describes the tool outcomes in an event batch.
func backgroundNote(events []api.Event) (string, bool) {
	var parts []json.RawMessage
	for _, ev := range events {
		if ev.EventType == api.KindToolCallEnded || ev.EventType == api.KindToolCallFailed {
			parts = append(parts, ev.Data)
		} else if ev.Origin != nil && ev.Origin.Kind == api.OriginEnvironment {
			parts = append(parts, ev.Data)
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	e := newEncoder(0)
	e.RawArray(parts)
	if e.Err != nil {
		e.B = nil
	}
	return "Background results: " + string(e.B), true
}
