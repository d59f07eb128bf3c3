package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestjson"
)

// DefaultMaxSteps bounds the model calls of one activation of the default
// loop unless its configuration sets "max_steps".
const DefaultMaxSteps = 64

// Errors of the default loop.
var (
	ErrStepBudget = errors.New("agentloop: step budget exhausted")
)

// Configuration is the default loop's configuration.
type Configuration struct {
	MaxSteps int `json:"max_steps,omitempty"`
}

// Default is the built-in loop: it calls the model with the transcript plus
// the user message, dispatches the tool calls the model asks for in one
// parallel dispatch, appends tool_use and tool_result blocks, feeds the
// results back, and stops on a final answer or its step budget. It saves the
// transcript with set_transcript and returns the final text as result.
// It appends to in.Transcript as append does: a caller that passes spare
// capacity lends it to the loop for the call, and gets the turn's messages
// there without a copy of the transcript.
//
// Finished background tools in the activation's event batch become a user
// note ahead of the user's message; an event-triggered activation (no
// input) sends that note alone and asks the model again.
func Default(ctx context.Context, svc Services, in api.TurnInput) (api.TurnOutput, error) {
	var conf Configuration
	if len(in.Configuration) > 0 && string(in.Configuration) != "null" {
		d := newDecoder(in.Configuration)
		d.configuration(&conf)
		if err := d.End(); err != nil {
			return api.TurnOutput{}, fmt.Errorf("agentloop: configuration: %w", err)
		}
	}
	if conf.MaxSteps <= 0 {
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
	envOf := map[string]string{}
	for _, t := range in.Tools {
		if len(t.Environments) > 0 {
			envOf[t.Name] = t.Environments[0]
		}
	}
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
		results, err := runTools(ctx, svc, uses, envOf)
		dispatched = true
		if err != nil {
			// The calls may have run: each is answered with the
			// failure, so that the saved transcript stays well formed.
			msgs = append(msgs, api.Message{Role: api.RoleUser, Content: dispatchFailed(uses, err)})
			return failed(err)
		}
		msgs = append(msgs, api.Message{Role: api.RoleUser, Content: results})
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

// dispatchFailed answers each tool_use of a dispatch that failed with an
// error result: its outcome is unknown.
func dispatchFailed(uses []api.ContentBlock, err error) []api.ContentBlock {
	e := newEncoder(64)
	e.B = append(e.B, `{"status":"unknown","message":`...)
	e.Str("the dispatch failed: " + err.Error())
	e.B = append(e.B, '}')
	blocks := make([]api.ContentBlock, len(uses))
	for i, u := range uses {
		blocks[i] = api.ToolResultBlock(u.ID, e.B, true)
	}
	return blocks
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

// runTools dispatches every tool_use in one call and turns the returns into
// tool_result blocks in the same order.
func runTools(ctx context.Context, svc Services, uses []api.ContentBlock, envOf map[string]string) ([]api.ContentBlock, error) {
	calls := make([]api.ToolInvocation, len(uses))
	for i, u := range uses {
		input := u.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		calls[i] = api.ToolInvocation{CallID: u.ID, Name: u.Name, Environment: envOf[u.Name], Input: input}
	}
	returns, err := svc.Dispatch(ctx, calls)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]api.ToolReturn, len(returns))
	for _, r := range returns {
		byID[r.CallID] = r
	}
	blocks := make([]api.ContentBlock, len(uses))
	for i, u := range uses {
		content, isErr := resultContent(byID[u.ID])
		blocks[i] = api.ToolResultBlock(u.ID, content, isErr)
	}
	return blocks, nil
}

// resultContent turns a ToolReturn into tool_result content: the value of
// an ok outcome, the outcome itself otherwise, or a pending note for a tool
// that returned without finishing.
func resultContent(r api.ToolReturn) (json.RawMessage, bool) {
	for _, ev := range r.Events {
		if ev.EventType != api.KindToolCallEnded {
			continue
		}
		var end api.ToolCallEnded
		// A copy: the decoded values share the decoder's input.
		d := newDecoder(bytes.Clone(ev.Data))
		d.toolCallEnded(&end)
		if err := d.End(); err != nil {
			return json.RawMessage(`{"status":"unknown","message":"unreadable outcome"}`), true
		}
		if !end.Outcome.IsError() {
			if len(end.Outcome.Content) > 0 {
				return end.Outcome.Content, false
			}
			if len(end.Outcome.Value) == 0 {
				return json.RawMessage("null"), false
			}
			return end.Outcome.Value, false
		}
		e := newEncoder(len(end.Outcome.Value) + len(end.Outcome.Content) + len(end.Outcome.Message) + 64)
		e.Outcome(&end.Outcome)
		return e.B, true
	}
	if r.Sequence == 0 {
		return json.RawMessage(`{"status":"error","error":{"code":"tool_error","message":"no return"}}`), true
	}
	if !r.Finished {
		b := strconv.AppendUint([]byte(`{"sequence":`), r.Sequence, 10)
		return append(b, `,"status":"pending"}`...), false
	}
	return json.RawMessage(`{"status":"unknown","message":"no outcome recorded"}`), true
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
