package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// myLoop answers the message's length and calls no service.
func myLoop(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	if in.Input == nil {
		return api.TurnOutput{}, nil // woken by events only
	}
	out, err := json.Marshal(map[string]int{"length": len(in.Input.Message)})
	return api.TurnOutput{Result: out}, err
}

// A guest registers its loop from an init function,
//
//	func init() { agentloop.Export(myLoop) }
//	func main() {}
//
// and is built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
// The exported loop is an ordinary Func, so it runs natively too.
func ExampleExport() {
	agentloop.Export(myLoop)

	out, err := agentloop.Exported()(context.Background(), nil, api.TurnInput{Input: &api.UserInput{Message: "hello"}})
	fmt.Println(string(out.Result), err)
	// Output: {"length":5} <nil>
}
