//go:build wasip1

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestabi"
)

// Service imports. Each takes the JSON input at ptr/len and answers
// status<<32 | answer length; the answer is fetched with hostAnswer.

//go:wasmimport brain emit
func hostEmit(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain result
func hostResult(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain returned
func hostReturned(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain finish
func hostFinish(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain model
func hostModel(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain environments
func hostEnvironments(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain telemetry
func hostTelemetry(ptr unsafe.Pointer, n uint32) uint64

// call sends raw to a service import and answers its answer bytes.
func call(method string, fn guestabi.Import, raw []byte) ([]byte, error) {
	status, answer, err := guestabi.Call(fn, raw)
	if err != nil {
		return nil, fmt.Errorf("tool: %s: %w", method, err)
	}
	if status != 0 {
		return nil, decodeHostError(method, answer)
	}
	return answer, nil
}

// seqCall sends v as JSON and reads the committed sequence answered.
func seqCall(method string, fn guestabi.Import, raw []byte) (uint64, error) {
	answer, err := call(method, fn, raw)
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseUint(string(answer), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tool: %s: answer %q is not a sequence", method, answer)
	}
	return seq, nil
}

// hostServices reaches the host's service table through the imports.
type hostServices struct{}

// ended refuses a service call under a ctx that has ended (see
// guestabi.Ended): the Tool has given up what the call would do, and once
// made a call runs in the host until it answers.
func ended(ctx context.Context, method string) error {
	if err := guestabi.Ended(ctx); err != nil {
		return fmt.Errorf("tool: %s: %w", method, err)
	}
	return nil
}

func (hostServices) Emit(ctx context.Context, eventType string, data json.RawMessage) (uint64, error) {
	if err := ended(ctx, "emit"); err != nil {
		return 0, err
	}
	raw, err := encodeEmit(eventType, data)
	if err != nil {
		return 0, fmt.Errorf("tool: emit: %w", err)
	}
	return seqCall("emit", hostEmit, raw)
}

func (hostServices) Result(ctx context.Context, o api.Outcome) (uint64, error) {
	if err := ended(ctx, "result"); err != nil {
		return 0, err
	}
	raw, err := encodeOutcome(&o)
	if err != nil {
		return 0, fmt.Errorf("tool: result: %w", err)
	}
	return seqCall("result", hostResult, raw)
}

func (hostServices) Returned(ctx context.Context, o *api.Outcome) (uint64, error) {
	if err := ended(ctx, "returned"); err != nil {
		return 0, err
	}
	raw, err := encodeOutcome(o)
	if err != nil {
		return 0, fmt.Errorf("tool: returned: %w", err)
	}
	return seqCall("returned", hostReturned, raw)
}

func (hostServices) Finish(ctx context.Context, o *api.Outcome) (uint64, error) {
	if err := ended(ctx, "finish"); err != nil {
		return 0, err
	}
	raw, err := encodeOutcome(o)
	if err != nil {
		return 0, fmt.Errorf("tool: finish: %w", err)
	}
	return seqCall("finish", hostFinish, raw)
}

func (hostServices) Model(ctx context.Context, req api.ModelRequest) (res api.ModelResult, err error) {
	if err := ended(ctx, "model"); err != nil {
		return res, err
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return res, fmt.Errorf("tool: model: %w", err)
	}
	answer, err := call("model", hostModel, raw)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		return res, fmt.Errorf("tool: model: answer: %w", err)
	}
	return res, nil
}

func (hostServices) Environments(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
	if err := ended(ctx, "environments"); err != nil {
		return nil, err
	}
	answer, err := call("environments", hostEnvironments, req)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(answer), nil
}

func (hostServices) Telemetry(ctx context.Context, record json.RawMessage) error {
	if err := ended(ctx, "telemetry"); err != nil {
		return err
	}
	_, err := call("telemetry", hostTelemetry, record)
	return err
}

//go:wasmexport run
func run(ptr, n uint32) uint64 {
	o, err := runTool(ptr, n)
	return guestabi.Answer(encodeAnswer(o, err))
}

func runTool(ptr, n uint32) (o api.Outcome, err error) {
	raw, ok := guestabi.Input(ptr, n)
	if !ok {
		return o, errors.New("tool: invocation is not in the buffer brain_alloc answered")
	}
	if exported == nil {
		return o, errors.New("tool: the module exports no tool (call tool.Export in an init function)")
	}
	inv, err := decodeInvocation(raw)
	if err != nil {
		return o, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool panicked: %v", r)
		}
	}()
	return exported(context.Background(), hostServices{}, inv)
}
