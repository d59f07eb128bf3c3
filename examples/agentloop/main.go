// Command agentloop is a small agentloop written in Go and built to
// WebAssembly. It keeps a turn counter in the session's agentloop KV, asks
// the model with the saved transcript plus the new message (offering it no
// tools: an answer that asks for one fails the turn), reports its
// progress as an extension event, saves the transcript and returns
// {"turn": n, "reply": text}.
//
// Build it and admit it, from the repository's root, with the token
// "brain serve" prints:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o loop.wasm ./examples/agentloop
//	curl -H "Authorization: Bearer $BRAIN_TOKEN" -H "Idempotency-Key: admit-loop-1" \
//	  -H "Content-Type: application/octet-stream" --data-binary @loop.wasm \
//	  http://127.0.0.1:8080/v1/agentloops
//
// then create sessions with the agentloop implementation
// {"type":"brain_component","entrypoint":"turn","id":"<id>"}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

func init() { agentloop.Export(Loop) }

// main is not run: a Wasm reactor only runs init functions, then turns.
func main() {}

// Loop is the agentloop. It runs the same natively, against any
// agentloop.Services.
func Loop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	if in.Input == nil {
		return api.TurnOutput{}, nil // woken by events only: nothing to do
	}
	turn := 1
	raw, ok, err := svc.KVRead(ctx, "turns")
	if err != nil {
		return api.TurnOutput{}, err
	}
	if ok {
		if err := json.Unmarshal(raw, &turn); err != nil {
			return api.TurnOutput{}, fmt.Errorf("kv turns: %w", err)
		}
		turn++
	}
	if _, err := svc.KVPut(ctx, "turns", json.RawMessage(fmt.Sprint(turn))); err != nil {
		return api.TurnOutput{}, err
	}
	msgs := append(append([]api.Message(nil), in.Transcript...), api.UserMessage(*in.Input))
	// An empty tool list offers the model none; an absent one would offer
	// the session's tools, whose calls this loop does not dispatch.
	res, err := svc.Model(ctx, api.ModelRequest{Messages: msgs, Tools: []api.ToolDefinition{}})
	if err != nil {
		return api.TurnOutput{}, err
	}
	if res.StopReason == api.StopToolUse {
		return api.TurnOutput{}, errors.New("this loop offers no tools")
	}
	progress, _ := json.Marshal(map[string]int{"turn": turn})
	if _, err := svc.Emit(ctx, "counted", progress); err != nil {
		return api.TurnOutput{}, err
	}
	if _, err := svc.SetTranscript(ctx, append(msgs, res.Message)); err != nil {
		return api.TurnOutput{}, err
	}
	out, err := json.Marshal(map[string]any{"turn": turn, "reply": res.Message.Text()})
	return api.TurnOutput{Result: out}, err
}
