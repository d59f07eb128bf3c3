package loophost_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// With a tracer, the operations the built-in environment answers itself
// (a Wasm Tool's execute, the lifecycle of an unrouted brain environment)
// are spans of their own; an operation passed on to the operator's
// environments is not traced here (they trace it themselves), so no
// operation is traced twice.
func TestBuiltinEnvironmentSpans(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	tp, stop, err := tracing.NewTracerProvider(ctx, tracing.Settings{Traces: tracing.Signal{Endpoint: rcv.URL() + "/v1/traces"}})
	if err != nil || tp == nil {
		t.Fatalf("tracer provider: %v %v", tp, err)
	}
	h, id := toolHost(t, loophost.Options{Tracer: tp.Tracer("test")})
	e := h.Environments(&nextEnvs{routes: map[string]bool{"remote": true}})
	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	remote := api.Environment{Name: "remote", Driver: api.DriverHTTP, URL: "http://127.0.0.1:9"}
	if r, _ := e.Deliver(ctx, op(local, envapi.Execute(impl(id, ""), json.RawMessage(`{"op":"echo"}`), nil, nil))); r.Type != envapi.ReceiptResult {
		t.Fatalf("execute: %+v", r)
	}
	if r, _ := e.Deliver(ctx, op(remote, envapi.Setup(nil))); string(r.Output) != `"from next"` {
		t.Fatalf("setup of the routed environment: %+v", r)
	}
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the Wasm Tool's execute only: %+v", len(spans), spans)
	}
	s := spans[0]
	want := map[string]any{"brain.session_id": "ses_x", "brain.sequence": int64(9), "brain.driver": api.DriverBrain,
		"brain.environment": "local", "brain.receipt": "result"}
	if s.Name != "environment execute" {
		t.Errorf("span %q", s.Name)
	}
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("%s = %v, want %v", k, s.Attributes[k], v)
		}
	}
}
