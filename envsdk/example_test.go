package envsdk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// greeter is a provider with one Tool: it greets the name in its input.
type greeter struct{ envsdk.Base }

func (greeter) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(x.Input, &in); err != nil || in.Name == "" {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, "input needs a name")
	}
	return envsdk.Output(map[string]string{"greeting": "hello, " + in.Name})
}

func Example() {
	srv := httptest.NewServer(envsdk.NewHandler(greeter{}, &envsdk.Options{Token: "secret"}))
	defer srv.Close()

	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID: "ses_example", Environment: "greeter", Sequence: 4,
		Request: envapi.Execute(json.RawMessage(`"greet"`), json.RawMessage(`{"name":"Ada"}`), nil, nil),
	}}
	body, _ := json.Marshal(cmd)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/operations", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(bytes.TrimSpace(data)))
	// Output: 200 {"contract":"environment/v1","sequence":4,"receipt":{"type":"result","output":{"greeting":"hello, Ada"}}}
}
