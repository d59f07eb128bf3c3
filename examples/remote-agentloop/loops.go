package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Loop runs one activation: in is the TurnInput Brain sent, inv the
// client of the activation's callback grant. It answers the turn's result.
type Loop func(c *envsdk.Ctx, inv *envsdk.Invocation, in api.TurnInput) (any, error)

// registry resolves the implementation {"loop": NAME}.
var registry = map[string]Loop{
	"memo": memo,
}

// loops is the environment/v1 provider: setup has nothing to allocate, and
// every execute runs the loop its implementation names.
type loops struct{}

func (loops) Setup(*envsdk.Ctx) (envsdk.SetupResult, error) { return envsdk.SetupResult{}, nil }
func (loops) Detach(*envsdk.Ctx) error                      { return nil }
func (loops) Teardown(*envsdk.Ctx) error                    { return nil }

func (loops) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var impl struct {
		Loop string `json:"loop"`
	}
	if err := json.Unmarshal(x.Implementation, &impl); err != nil || registry[impl.Loop] == nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, fmt.Sprintf("no loop named by %s", x.Implementation))
	}
	var in api.TurnInput
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, "the input is not a TurnInput: "+err.Error())
	}
	result, err := registry[impl.Loop](c, x.Invocation, in)
	if err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(api.TurnOutput{Result: mustJSON(result)})
}

// memo answers a message through the session's model, offering it no
// tools, and saves the conversation; it counts its turns in the KV key
// "turns". Its result is {"turn": N, "reply": TEXT}. An answer that asks
// for a tool fails the activation and leaves the transcript as it was. An
// activation woken by events (no user input) answers how many it was
// handed, {"events": N}.
func memo(c *envsdk.Ctx, inv *envsdk.Invocation, in api.TurnInput) (any, error) {
	ctx := c.Context()
	if in.Input == nil {
		return map[string]int{"events": len(in.Events)}, nil
	}
	raw, found, err := inv.KVRead(ctx, "turns")
	if err != nil {
		return nil, err
	}
	turn := 1
	if found {
		n, err := strconv.Atoi(string(raw))
		if err != nil {
			return nil, envsdk.Fail("bad_state", "kv turns holds "+string(raw))
		}
		turn = n + 1
	}
	msgs := append(append([]api.Message(nil), in.Transcript...), api.UserMessage(*in.Input))
	// An empty tool list offers the model none; an absent one would offer
	// the session's tools, whose calls this loop does not dispatch.
	answer, err := inv.Model(ctx, api.ModelRequest{Messages: msgs, Tools: []api.ToolDefinition{}})
	if err != nil {
		return nil, err
	}
	var res api.ModelResult
	if err := json.Unmarshal(answer, &res); err != nil {
		return nil, err
	}
	if res.StopReason == api.StopToolUse {
		// Saved, a tool_use without its tool_result would make every
		// later model call of the session fail.
		return nil, envsdk.Fail("unexpected_tool_use", "the model asked for a tool, and this loop offers none")
	}
	if _, err := inv.SetTranscript(ctx, append(msgs, res.Message)); err != nil {
		return nil, err
	}
	if _, err := inv.KVPut(ctx, "turns", turn); err != nil {
		return nil, err
	}
	return map[string]any{"turn": turn, "reply": res.Message.Text()}, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
