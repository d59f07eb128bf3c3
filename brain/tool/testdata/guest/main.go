// Command guest is the test Tool of the brain/tool tests: its input names
// what it does with the services.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/tool"
)

func init() { tool.Export(run) }

func main() {}

func run(ctx context.Context, svc tool.Services, inv tool.Invocation) (api.Outcome, error) {
	var in struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(inv.Input, &in); err != nil {
		return api.Outcome{}, err
	}
	switch in.Op {
	case "cancelled":
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(errors.New("the tool gave up"))
		return callAll(ctx, svc)
	case "expired":
		// The deadline passes while the Tool computes, without a pause
		// in which the guest's timers could run.
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		deadline, _ := ctx.Deadline()
		for !time.Now().After(deadline) {
		}
		return callAll(ctx, svc)
	}
	return tool.Error("unknown_op", in.Op), nil
}

// callAll calls every service under ctx and answers the error of each
// call by method ("" for none).
func callAll(ctx context.Context, svc tool.Services) (api.Outcome, error) {
	o := tool.OK(json.RawMessage(`"r"`))
	errs := map[string]error{}
	_, errs["emit"] = svc.Emit(ctx, "guest.note", json.RawMessage(`{"n":1}`))
	_, errs["result"] = svc.Result(ctx, o)
	_, errs["returned"] = svc.Returned(ctx, &o)
	_, errs["finish"] = svc.Finish(ctx, &o)
	_, errs["model"] = svc.Model(ctx, api.ModelRequest{Messages: []api.Message{}})
	_, errs["environments"] = svc.Environments(ctx, json.RawMessage(`{}`))
	errs["telemetry"] = svc.Telemetry(ctx, json.RawMessage(`{}`))
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
	if err != nil {
		return api.Outcome{}, err
	}
	return tool.OK(b), nil
}
