package agentlooptest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Loop builds the Go agentloop in dir (see Build), admits it into a Wasm
// host of its own and answers the function that runs its activations:
// each call runs one turn in a fresh instance against the service table it
// is given, with no session engine in between, so that the test answers
// and sees every service call itself. The host is closed when the test
// ends. Building and compiling a guest takes seconds: in -short mode Loop
// skips the test.
func Loop(t testing.TB, dir string) agentloop.Func {
	t.Helper()
	h, module := guestHost(t, dir, false)
	a, err := h.Admit(context.Background(), module)
	fn, err := h.Func(context.Background(), admitted(t, a, err))
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// ToolServices answers the service calls of a Tool invocation: method is
// the callback API's ExecutionCall method, input and the answer its JSON.
type ToolServices interface {
	Call(ctx context.Context, method string, input json.RawMessage) (json.RawMessage, error)
}

// ToolFunc runs one invocation of a Tool with input against services
// (nil refuses every call) and answers its receipt.
type ToolFunc func(ctx context.Context, services ToolServices, input json.RawMessage) envapi.Receipt

// Tool builds the Go Tool in dir (see Build), admits it into a Wasm host
// of its own and answers the function that runs its invocations, each in a
// fresh instance; as with Loop, the test answers every service call, the
// host is closed when the test ends and -short mode skips the test.
func Tool(t testing.TB, dir string) ToolFunc {
	t.Helper()
	h, module := guestHost(t, dir, true)
	a, err := h.AdmitTool(context.Background(), module)
	id := admitted(t, a, err)
	return func(ctx context.Context, services ToolServices, input json.RawMessage) envapi.Receipt {
		return h.RunTool(ctx, loophost.ToolCall{ID: id, Input: input, Services: services})
	}
}

// guestHost builds the guest in dir and opens a Wasm host for it (with
// Tools enabled when tools is set) that is closed when the test ends.
func guestHost(t testing.TB, dir string, tools bool) (*loophost.Host, []byte) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Wasm module and compiles it")
	}
	module := Build(t, dir)
	opts := loophost.Options{Dir: t.TempDir(), CacheDir: cacheDir()}
	if tools {
		opts.ToolsDir = t.TempDir()
	}
	h, err := loophost.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h, module
}

// admitted answers the id of an admission, failing the test when the
// module was refused.
func admitted(t testing.TB, a loophost.Admission, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != loophost.StatusAdmitted {
		t.Fatalf("module %s: %s: %v", a.ID, a.Status, a.Error)
	}
	return a.ID
}
