//go:build wasip1

package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/brain-in-go/brain/brain/api"
)

// Service imports. Each takes the JSON input at ptr/len and answers
// status<<32 | answer length; the answer is fetched with hostAnswer.

//go:wasmimport brain model
func hostModel(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain dispatch
func hostDispatch(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain emit
func hostEmit(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain telemetry
func hostTelemetry(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain events
func hostEvents(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain set_transcript
func hostSetTranscript(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain kv_read
func hostKVRead(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain kv_put
func hostKVPut(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain kv_delete
func hostKVDelete(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain environments
func hostEnvironments(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport brain answer
func hostAnswer(ptr unsafe.Pointer, n uint32) uint32

// call sends raw to a service import and answers its answer bytes.
func call(method string, fn func(unsafe.Pointer, uint32) uint64, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		raw = []byte("null")
	}
	r := fn(unsafe.Pointer(unsafe.SliceData(raw)), uint32(len(raw)))
	runtime.KeepAlive(raw)
	status, n := uint32(r>>32), uint32(r)
	answer := make([]byte, n)
	if n > 0 {
		if got := hostAnswer(unsafe.Pointer(unsafe.SliceData(answer)), n); got != n {
			return nil, fmt.Errorf("agentloop: %s: host answered %d of %d bytes", method, got, n)
		}
	}
	if status != 0 {
		he := &HostError{Method: method}
		if err := json.Unmarshal(answer, he); err != nil {
			return nil, fmt.Errorf("agentloop: %s: unreadable host error: %w", method, err)
		}
		return nil, he
	}
	return answer, nil
}

// callJSON marshals in, calls, and unmarshals the answer into out.
func callJSON(method string, fn func(unsafe.Pointer, uint32) uint64, in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("agentloop: %s: %w", method, err)
	}
	answer, err := call(method, fn, raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("agentloop: %s: answer: %w", method, err)
	}
	return nil
}

// hostServices reaches the host's service table through the imports.
type hostServices struct{}

func (hostServices) Model(_ context.Context, req api.ModelRequest) (res api.ModelResult, err error) {
	err = callJSON("model", hostModel, req, &res)
	return res, err
}

func (hostServices) Dispatch(_ context.Context, calls []api.ToolInvocation) (out []api.ToolReturn, err error) {
	if calls == nil {
		calls = []api.ToolInvocation{}
	}
	err = callJSON("dispatch", hostDispatch, calls, &out)
	return out, err
}

func (hostServices) Emit(_ context.Context, eventType string, data json.RawMessage) (seq uint64, err error) {
	err = callJSON("emit", hostEmit, api.EmitInput{EventType: eventType, Data: data}, &seq)
	return seq, err
}

func (hostServices) Telemetry(_ context.Context, record json.RawMessage) error {
	_, err := call("telemetry", hostTelemetry, record)
	return err
}

func (hostServices) Events(_ context.Context, after uint64) (page api.EventPage, err error) {
	err = callJSON("events", hostEvents, after, &page)
	return page, err
}

func (hostServices) SetTranscript(_ context.Context, messages []api.Message) (seq uint64, err error) {
	if messages == nil {
		messages = []api.Message{}
	}
	err = callJSON("set_transcript", hostSetTranscript, messages, &seq)
	return seq, err
}

func (hostServices) KVRead(_ context.Context, key string) (json.RawMessage, bool, error) {
	var res api.KVReadResult
	if err := callJSON("kv_read", hostKVRead, key, &res); err != nil {
		return nil, false, err
	}
	return res.Value, res.Value != nil, nil
}

func (hostServices) KVPut(_ context.Context, key string, value json.RawMessage) (seq uint64, err error) {
	if value == nil {
		value = json.RawMessage("null")
	}
	err = callJSON("kv_put", hostKVPut, api.KVPutInput{Key: key, Value: value}, &seq)
	return seq, err
}

func (hostServices) KVDelete(_ context.Context, key string) (seq uint64, err error) {
	err = callJSON("kv_delete", hostKVDelete, key, &seq)
	return seq, err
}

func (hostServices) Environments(_ context.Context, req json.RawMessage) (json.RawMessage, error) {
	answer, err := call("environments", hostEnvironments, req)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(answer), nil
}

// input holds the buffer brain_alloc handed out for the turn input; out
// holds the turn's answer until the host has read it.
var input, out []byte

//go:wasmexport brain_alloc
func brainAlloc(size uint32) uint32 {
	input = make([]byte, max(size, 1))
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

// turnFailure is the error member of a failed turn's answer.
type turnFailure struct {
	Message string `json:"message"`
	Ref     uint32 `json:"ref,omitempty"`
}

//go:wasmexport turn
func turn(ptr, n uint32) uint64 {
	var doc any
	o, err := runTurn(ptr, n)
	if err != nil {
		f := turnFailure{Message: err.Error()}
		var he *HostError
		if errors.As(err, &he) {
			f.Ref = he.Ref
		}
		doc = struct {
			Error turnFailure `json:"error"`
		}{f}
	} else {
		doc = o
	}
	b, merr := json.Marshal(doc)
	if merr != nil {
		b, _ = json.Marshal(struct {
			Error turnFailure `json:"error"`
		}{turnFailure{Message: "agentloop: answer: " + merr.Error()}})
	}
	out = b
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

func runTurn(ptr, n uint32) (o api.TurnOutput, err error) {
	if input == nil || uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input)))) != ptr || int(n) > len(input) {
		return o, errors.New("agentloop: turn input is not in the buffer brain_alloc answered")
	}
	raw := input[:n]
	input = nil
	if exported == nil {
		return o, errors.New("agentloop: the module exports no loop (call agentloop.Export in an init function)")
	}
	var in api.TurnInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return o, fmt.Errorf("agentloop: turn input: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentloop panicked: %v", r)
		}
	}()
	return exported(context.Background(), hostServices{}, in)
}
