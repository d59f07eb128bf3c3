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
		d := decoder{data: answer}
		d.hostError(he)
		if err := d.end(); err != nil {
			return nil, fmt.Errorf("agentloop: %s: unreadable host error: %w", method, err)
		}
		return nil, he
	}
	return answer, nil
}

// send calls a service with the input in e and answers a decoder of its
// answer.
func send(method string, fn func(unsafe.Pointer, uint32) uint64, e *encoder) (decoder, error) {
	if e.err != nil {
		return decoder{}, fmt.Errorf("agentloop: %s: %w", method, e.err)
	}
	answer, err := call(method, fn, e.b)
	return decoder{data: answer}, err
}

// answered checks that d read its whole answer.
func answered(method string, d *decoder) error {
	if err := d.end(); err != nil {
		return fmt.Errorf("agentloop: %s: answer: %w", method, err)
	}
	return nil
}

// seqCall sends the input in e and reads the committed sequence answered.
func seqCall(method string, fn func(unsafe.Pointer, uint32) uint64, e *encoder) (uint64, error) {
	d, err := send(method, fn, e)
	if err != nil {
		return 0, err
	}
	seq := d.uint()
	return seq, answered(method, &d)
}

// hostServices reaches the host's service table through the imports.
type hostServices struct{}

func (hostServices) Model(_ context.Context, req api.ModelRequest) (res api.ModelResult, err error) {
	e := newEncoder(sizeMessages(req.Messages) + 64)
	e.modelRequest(&req)
	d, err := send("model", hostModel, &e)
	if err != nil {
		return res, err
	}
	d.modelResult(&res)
	return res, answered("model", &d)
}

func (hostServices) Dispatch(_ context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	if calls == nil {
		calls = []api.ToolInvocation{}
	}
	size := 2
	for _, c := range calls {
		size += 64 + len(c.CallID) + len(c.Name) + len(c.Environment) + len(c.Input)
	}
	e := newEncoder(size)
	e.invocations(calls)
	d, err := send("dispatch", hostDispatch, &e)
	if err != nil {
		return nil, err
	}
	out := d.toolReturns()
	return out, answered("dispatch", &d)
}

func (hostServices) Emit(_ context.Context, eventType string, data json.RawMessage) (uint64, error) {
	e := newEncoder(32 + len(eventType) + len(data))
	e.keyRaw("event_type", eventType, "data", data)
	return seqCall("emit", hostEmit, &e)
}

func (hostServices) Telemetry(_ context.Context, record json.RawMessage) error {
	_, err := call("telemetry", hostTelemetry, record)
	return err
}

func (hostServices) Events(_ context.Context, after uint64) (page api.EventPage, err error) {
	e := newEncoder(20)
	e.uint(after)
	d, err := send("events", hostEvents, &e)
	if err != nil {
		return page, err
	}
	d.eventPage(&page)
	return page, answered("events", &d)
}

func (hostServices) SetTranscript(_ context.Context, messages []api.Message) (uint64, error) {
	if messages == nil {
		messages = []api.Message{}
	}
	e := newEncoder(sizeMessages(messages))
	e.messages(messages)
	return seqCall("set_transcript", hostSetTranscript, &e)
}

func (hostServices) KVRead(_ context.Context, key string) (json.RawMessage, bool, error) {
	e := newEncoder(len(key) + 8)
	e.str(key)
	d, err := send("kv_read", hostKVRead, &e)
	if err != nil {
		return nil, false, err
	}
	value := d.kvReadResult()
	if err := answered("kv_read", &d); err != nil {
		return nil, false, err
	}
	return value, value != nil, nil
}

func (hostServices) KVPut(_ context.Context, key string, value json.RawMessage) (uint64, error) {
	if value == nil {
		value = json.RawMessage("null")
	}
	e := newEncoder(24 + len(key) + len(value))
	e.keyRaw("key", key, "value", value)
	return seqCall("kv_put", hostKVPut, &e)
}

func (hostServices) KVDelete(_ context.Context, key string) (uint64, error) {
	e := newEncoder(len(key) + 8)
	e.str(key)
	return seqCall("kv_delete", hostKVDelete, &e)
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

//go:wasmexport turn
func turn(ptr, n uint32) uint64 {
	o, err := runTurn(ptr, n)
	var e encoder
	if err == nil {
		e = newEncoder(len(o.Result) + 16)
		e.turnOutput(&o)
		if e.err != nil {
			err = fmt.Errorf("agentloop: answer: %w", e.err)
		}
	}
	if err != nil {
		var ref uint32
		var he *HostError
		if errors.As(err, &he) {
			ref = he.Ref
		}
		msg := err.Error()
		e = newEncoder(len(msg) + 48)
		e.turnError(msg, ref)
	}
	out = e.b
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
	d := decoder{data: raw}
	d.turnInput(&in)
	if err := d.end(); err != nil {
		return o, fmt.Errorf("agentloop: turn input: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentloop panicked: %v", r)
		}
	}()
	return exported(context.Background(), hostServices{}, in)
}
