// Command benchtool is the Tool of the invocation benchmark: it emits one
// event and answers its input.
package main

import (
	"context"
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/tool"
)

func init() { tool.Export(run) }

func main() {}

func run(ctx context.Context, svc tool.Services, inv tool.Invocation) (api.Outcome, error) {
	if _, err := svc.Emit(ctx, "bench.note", json.RawMessage(`{"n":1}`)); err != nil {
		return api.Outcome{}, err
	}
	return tool.OK(inv.Input), nil
}
