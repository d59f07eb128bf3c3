// Command guest is the test loop of the brain/agentloop tests: its
// message names what it does with the services.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

func init() { agentloop.Export(loop) }

func main() {}

func loop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	var op string
	var n int
	if _, err := fmt.Sscan(in.Input.Message, &op, &n); err != nil {
		return api.TurnOutput{}, fmt.Errorf("message %q: %w", in.Input.Message, err)
	}
	switch op {
	case "cancelled":
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errors.New("the loop gave up"))
		return callAll(ctx, svc)
	case "expired":
		// The deadline passes while the loop computes, without a pause in
		// which the guest's timers could run.
		ctx, cancel := context.WithTimeout(ctx, time.Duration(n)*time.Millisecond)
		defer cancel()
		deadline, _ := ctx.Deadline()
		for !time.Now().After(deadline) {
		}
		return callAll(ctx, svc)
	}
	return api.TurnOutput{}, fmt.Errorf("unknown op %q", op)
}

// callAll calls every service under ctx and answers the error of each
// call by method.
func callAll(ctx context.Context, svc agentloop.Services) (api.TurnOutput, error) {
	errs := map[string]error{}
	_, errs["model"] = svc.Model(ctx, api.ModelRequest{Messages: []api.Message{}})
	_, errs["dispatch"] = svc.Dispatch(ctx, []api.ToolInvocation{{CallID: "c1", Name: "t", Input: json.RawMessage(`{}`)}})
	_, errs["emit"] = svc.Emit(ctx, "guest.note", json.RawMessage(`{"n":1}`))
	errs["telemetry"] = svc.Telemetry(ctx, json.RawMessage(`{}`))
	_, errs["events"] = svc.Events(ctx, 0)
	_, errs["set_transcript"] = svc.SetTranscript(ctx, []api.Message{})
	_, _, errs["kv_read"] = svc.KVRead(ctx, "k")
	_, errs["kv_put"] = svc.KVPut(ctx, "k", json.RawMessage(`1`))
	_, errs["kv_delete"] = svc.KVDelete(ctx, "k")
	_, errs["environments"] = svc.Environments(ctx, json.RawMessage(`{}`))
	type answer struct {
		Message  string `json:"message"`
		Canceled bool   `json:"canceled"`
		Expired  bool   `json:"expired"`
	}
	out := map[string]answer{}
	for method, err := range errs {
		if err != nil {
			out[method] = answer{Message: err.Error(), Canceled: errors.Is(err, context.Canceled),
				Expired: errors.Is(err, context.DeadlineExceeded)}
		} else {
			out[method] = answer{}
		}
	}
	b, err := json.Marshal(out)
	return api.TurnOutput{Result: b}, err
}
