package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Call dispatches a service call by method name with JSON input and
// output, as the HTTP callback endpoint and the Wasm host deliver them.
// Mutations answer the committed sequence as a bare JSON integer. Errors
// wrap the package sentinels (ErrNotGranted, ErrReservedName, ErrEmitLimit,
// ErrModelCallLimit, ErrCancelled, ErrExecutionClosed, ...); Code maps them
// to API codes.
func (x *execution) Call(ctx context.Context, method string, input json.RawMessage) (json.RawMessage, error) {
	if err := x.unrecordedAnswer(ctx); err != nil {
		return nil, err
	}
	out, err := x.call(ctx, method, input)
	// The caller is outside the engine: what it is answered about is
	// durable first. A failure whose record could not be written (a
	// model call's model_call_failed) is not answered either: the
	// caller is told that the journal failed, as after a success.
	if ferr := x.s.flush(); ferr != nil {
		return nil, ferr
	}
	return out, err
}

func (x *execution) call(ctx context.Context, method string, input json.RawMessage) (json.RawMessage, error) {
	if err := x.check(ctx, method); err != nil {
		if !isMethod(method) {
			return nil, fmt.Errorf("%w: %q", ErrUnknownMethod, method)
		}
		return nil, err
	}
	decode := func(v any) error { return DecodeInput(method, input, v) }
	seqOut := func(seq uint64, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		return json.Marshal(seq)
	}
	optOutcome := func() (*api.Outcome, error) {
		if len(input) == 0 || string(input) == "null" {
			return nil, nil
		}
		var o api.Outcome
		if err := decode(&o); err != nil {
			return nil, err
		}
		return &o, nil
	}
	switch method {
	case envapi.MethodModel:
		var req api.ModelRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		res, err := x.Model(ctx, req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	case envapi.MethodDispatch:
		var calls []api.ToolInvocation
		if err := decode(&calls); err != nil {
			return nil, err
		}
		out, err := x.Dispatch(ctx, calls)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	case envapi.MethodEmit:
		var in api.EmitInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return seqOut(x.Emit(ctx, in.EventType, in.Data))
	case envapi.MethodTelemetry:
		return json.RawMessage("null"), x.Telemetry(ctx, input)
	case envapi.MethodEvents:
		var after uint64
		if err := decode(&after); err != nil {
			return nil, err
		}
		page, err := x.Events(ctx, after)
		if err != nil {
			return nil, err
		}
		return json.Marshal(page)
	case envapi.MethodSetTranscript:
		var msgs []api.Message
		if err := decode(&msgs); err != nil {
			return nil, err
		}
		return seqOut(x.SetTranscript(ctx, msgs))
	case envapi.MethodKVRead:
		var key string
		if err := decode(&key); err != nil {
			return nil, err
		}
		v, ok, err := x.KVRead(ctx, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			return json.RawMessage("{}"), nil
		}
		return json.Marshal(api.KVReadResult{Value: v})
	case envapi.MethodKVPut:
		var in api.KVPutInput
		if err := decode(&in); err != nil {
			return nil, err
		}
		return seqOut(x.KVPut(ctx, in.Key, in.Value))
	case envapi.MethodKVDelete:
		var key string
		if err := decode(&key); err != nil {
			return nil, err
		}
		return seqOut(x.KVDelete(ctx, key))
	case envapi.MethodEnvironments:
		return x.Environments(ctx, input)
	case envapi.MethodResult:
		if x.ctrl != nil {
			return seqOut(x.observe(ctx, input))
		}
		var o api.Outcome
		if err := decode(&o); err != nil {
			return nil, err
		}
		return seqOut(x.Result(ctx, o))
	case envapi.MethodReturned:
		o, err := optOutcome()
		if err != nil {
			return nil, err
		}
		return seqOut(x.Returned(ctx, o))
	case envapi.MethodFinish:
		o, err := optOutcome()
		if err != nil {
			return nil, err
		}
		return seqOut(x.Finish(ctx, o))
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownMethod, method)
}

// DecodeInput decodes the JSON input of a service call into v. Every
// method decoded so takes a value (a message array, a ModelRequest with
// its messages, a cursor, a key, an object): a missing or null input is
// refused as invalid rather than read as an empty value, and so are a
// ModelRequest without messages and a kv_put without its value. The
// closed envelopes (an Outcome, emit's {event_type, data}, kv_put's
// {key, value}) are decoded strictly: a field they do not have is refused
// rather than dropped.
func DecodeInput(method string, input json.RawMessage, v any) error {
	if t := bytes.TrimSpace(input); len(t) == 0 || string(t) == "null" {
		return fmt.Errorf("%w: %s input is required", ErrInvalid, method)
	}
	switch v.(type) {
	case *api.Outcome, *api.EmitInput, *api.KVPutInput:
		if err := envapi.Strict(input, v); err != nil {
			return fmt.Errorf("%w: %s input: %w", ErrInvalid, method, err)
		}
	default:
		if err := json.Unmarshal(input, v); err != nil {
			return fmt.Errorf("%w: %s input: %v", ErrInvalid, method, err)
		}
	}
	switch in := v.(type) {
	case *api.ModelRequest:
		if in.Messages == nil {
			return fmt.Errorf("%w: %s input: messages are required", ErrInvalid, method)
		}
	case *api.KVPutInput:
		// {key, value}: a stored JSON null is sent as "value": null.
		if in.Value == nil {
			return fmt.Errorf("%w: %s input: value is required", ErrInvalid, method)
		}
	}
	return nil
}

func isMethod(m string) bool {
	for _, list := range [][]string{envapi.AgentloopMethods(), envapi.ToolMethods()} {
		for _, x := range list {
			if x == m {
				return true
			}
		}
	}
	return false
}
