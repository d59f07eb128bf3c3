// Command guest is the test guest of package agentlooptest: a message
// "model N" calls the model N times, "emit N" emits an event of N bytes
// of data, "wait N" asks the scripted model to wait N ms before it
// answers, "runtime N" answers what the loop reads of its clock and its
// random source, and N bytes of the latter.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

func init() { agentloop.Export(loop) }

func main() {}

func loop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	if in.Input == nil {
		return api.TurnOutput{}, nil
	}
	var what string
	var n int
	if _, err := fmt.Sscan(in.Input.Message, &what, &n); err != nil {
		return api.TurnOutput{}, fmt.Errorf("message %q: %w", in.Input.Message, err)
	}
	switch what {
	case "model":
		for i := 0; i < n; i++ {
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}}); err != nil {
				return api.TurnOutput{}, fmt.Errorf("model call %d: %w", i+1, err)
			}
		}
	case "wait":
		script := api.UserInput{Message: fmt.Sprintf(`{"delay_ms":%d}`, n)}
		if _, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(script)}}); err != nil {
			return api.TurnOutput{}, fmt.Errorf("wait: %w", err)
		}
	case "emit":
		data, _ := json.Marshal(strings.Repeat("x", n))
		if _, err := svc.Emit(ctx, "blob", data); err != nil {
			return api.TurnOutput{}, fmt.Errorf("emit: %w", err)
		}
	case "runtime":
		random := make([]byte, n)
		_, _ = rand.Read(random)
		out, err := json.Marshal(map[string]any{
			"now_ms": time.Now().UnixMilli(), "random": random,
			"logical_time_ms": in.Runtime.LogicalTimeMs, "seed": in.Runtime.DeterministicSeed,
		})
		return api.TurnOutput{Result: out}, err
	default:
		return api.TurnOutput{}, fmt.Errorf("unknown request %q", what)
	}
	return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
}
