package envsdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

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

// sandbox is the provider of the package documentation.
type sandbox struct{ envsdk.Base }

func (s *sandbox) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(x.Input, &in); err != nil {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeInvalidInput, err.Error())
	}
	return envsdk.Output(map[string]string{"echo": in.Text})
}

// The provider of the package documentation, served with ListenAndServe
// until its context ends.
func ExampleListenAndServe() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the example
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, stop := context.WithCancel(context.Background())
	token := "secret"
	done := make(chan error, 1)
	go func() {
		h := envsdk.NewHandler(&sandbox{}, &envsdk.Options{Token: token})
		err := envsdk.ListenAndServe(ctx, addr, h)
		done <- err
	}()

	cmds := []string{
		`{"contract":"environment/v1","operation":{"session_id":"s1","environment":"box","sequence":1,"request":{"type":"setup","configuration":{}}}}`,
		`{"contract":"environment/v1","operation":{"session_id":"s1","environment":"box","sequence":2,"request":{"type":"execute","implementation":"echo","input":{"text":"hi"}}}}`,
		`{"contract":"environment/v1","operation":{"session_id":"s1","environment":"box","sequence":3,"request":{"type":"execute","implementation":"echo","input":"not an object"}}}`,
		`{"contract":"environment/v1","operation":{"session_id":"s1","environment":"box","sequence":4,"request":{"type":"setup","configuration":{}}}}`,
	}
	for _, cmd := range cmds {
		var resp *http.Response
		for range 100 { // until the server listens
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/operations", strings.NewReader(cmd))
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err = http.DefaultClient.Do(req); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			panic(err)
		}
		var answer struct {
			Receipt struct {
				Type   string          `json:"type"`
				Output json.RawMessage `json:"output"`
				Code   string          `json:"code"`
			} `json:"receipt"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		fmt.Println(strings.Join(strings.Fields(answer.Receipt.Type+" "+string(answer.Receipt.Output)+" "+answer.Receipt.Code), " "))
	}
	stop()
	fmt.Println("served:", <-done)
	// Output:
	// accepted
	// result {"echo":"hi"}
	// failure invalid_input
	// failure already_exists
	// served: <nil>
}

// A binding's resource allocated on first use: concurrent first callers
// share one allocation, and a failed allocation stays failed until Reset.
func ExampleLazy() {
	var box envsdk.Lazy[string]
	allocations := 0
	alloc := func(context.Context) (string, error) {
		allocations++
		if allocations == 1 {
			return "", envsdk.Fail("allocation_failed", "no capacity")
		}
		return fmt.Sprintf("box-%d", allocations), nil
	}
	ctx := context.Background()

	_, err := box.Get(ctx, alloc)
	fmt.Println(err)
	_, err = box.Get(ctx, alloc) // sticky: alloc does not run again
	fmt.Println(err, allocations)

	box.Reset()
	v, err := box.Get(ctx, alloc)
	fmt.Println(v, err)
	v, _ = box.Get(ctx, alloc)
	_, _, done := box.Peek()
	fmt.Println(v, allocations, done)
	// Output:
	// allocation_failed: no capacity
	// allocation_failed: no capacity 1
	// box-2 <nil>
	// box-2 2 true
}

// backup is a provider whose Tool answers returned at once and finishes
// later, from work that stops when Brain cancels the Tool, when its
// deadline passes or when its binding is torn down.
type backup struct{ envsdk.Base }

func (backup) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	work := x.Context() // lives on after Execute returns
	go func() {
		select {
		case <-time.After(10 * time.Second): // the long copy
			out := envapi.OK(json.RawMessage(`{"copied":true}`))
			_, _ = x.Invocation.Finish(work, &out)
		case <-work.Done():
			// Brain closed the Tool (cancelled, timeout) or the binding
			// went away: stop copying; nothing is sent.
		}
	}()
	return envapi.Returned(nil), nil
}

// A Tool that completes after its execute answered does its work under
// Execution.Context.
func ExampleExecution_Context() {
	h := envsdk.NewHandler(backup{}, &envsdk.Options{Token: "secret"})
	_ = h
}
