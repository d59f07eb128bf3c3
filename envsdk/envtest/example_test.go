package envtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// progressTool emits one extension event through its callback grant and
// answers its input.
type progressTool struct{ envsdk.Base }

func (progressTool) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	if _, err := x.Invocation.Emit(c.Context(), "step", map[string]int{"n": 1}); err != nil {
		return envapi.Receipt{}, err
	}
	return envsdk.Output(x.Input)
}

// A provider's test drives it with commands from Commands, sent by Post,
// while the fake Brain serves the grants those commands carry and records
// every call the provider makes. Tests use NewBrain(t); New is the same
// server without a test to close it.
func ExampleNewCommands() {
	b := envtest.New()
	defer b.Close()
	provider := httptest.NewServer(envsdk.NewHandler(progressTool{}, &envsdk.Options{Token: "secret"}))
	defer provider.Close()
	providerURL, token, ctx := provider.URL, "secret", context.Background()

	cmds := envtest.NewCommands("s1", "workspace")
	cmds.Brain = b // execute commands carry a fresh tool grant
	status, _, resp, err := envtest.Post(ctx, nil, providerURL, token, cmds.Setup(nil))
	fmt.Println(status, resp.Receipt.Type, err)

	status, _, resp, err = envtest.Post(ctx, nil, providerURL, token,
		cmds.Execute(json.RawMessage(`"echo"`), json.RawMessage(`{"n":1}`), nil))
	fmt.Println(status, resp.Receipt.Type, string(resp.Receipt.Output), err)

	for _, call := range b.CallsFor("s1", cmds.Last()) {
		fmt.Println(call.Method, call.Status, string(call.Answer))
	}
	// Output:
	// 200 accepted <nil>
	// 200 result {"n":1} <nil>
	// emit 200 100
	// finish 200 101
}
