//go:build wasip1

package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestabi"
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

// call sends raw to a service import and answers its answer bytes.
func call(method string, fn guestabi.Import, raw []byte) ([]byte, error) {
	status, answer, err := guestabi.Call(fn, raw)
	if err != nil {
		return nil, fmt.Errorf("agentloop: %s: %w", method, err)
	}
	if status != 0 {
		he := &HostError{Method: method}
		d := newDecoder(answer)
		d.hostError(he)
		if err := d.End(); err != nil {
			return nil, fmt.Errorf("agentloop: %s: unreadable host error: %w", method, err)
		}
		return nil, he
	}
	return answer, nil
}

// send calls a service with the input in e and answers a decoder of its
// answer.
func send(method string, fn guestabi.Import, e *encoder) (decoder, error) {
	if e.Err != nil {
		return decoder{}, fmt.Errorf("agentloop: %s: %w", method, e.Err)
	}
	answer, err := call(method, fn, e.B)
	return newDecoder(answer), err
}

// answered checks that d read its whole answer.
func answered(method string, d *decoder) error {
	if err := d.End(); err != nil {
		return fmt.Errorf("agentloop: %s: answer: %w", method, err)
	}
	return nil
}

// seqCall sends the input in e and reads the committed sequence answered.
func seqCall(method string, fn guestabi.Import, e *encoder) (uint64, error) {
	d, err := send(method, fn, e)
	if err != nil {
		return 0, err
	}
	seq := d.Uint()
	return seq, answered(method, &d)
}

// hostServices reaches the host's service table through the imports.
type hostServices struct{}

// ended refuses a service call under a ctx that has ended (see
// guestabi.Ended): the loop has given up what the call would do, and once
// made a call runs in the host until it answers.
func ended(ctx context.Context, method string) error {
	if err := guestabi.Ended(ctx); err != nil {
		return fmt.Errorf("agentloop: %s: %w", method, err)
	}
	return nil
}

func (hostServices) Model(ctx context.Context, req api.ModelRequest) (res api.ModelResult, err error) {
	if err := ended(ctx, "model"); err != nil {
		return res, err
	}
	e := newEncoder(sizeMessages(req.Messages) + 64)
	e.modelRequest(&req)
	d, err := send("model", hostModel, &e)
	if err != nil {
		return res, err
	}
	d.modelResult(&res)
	return res, answered("model", &d)
}

func (hostServices) Dispatch(ctx context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	if err := ended(ctx, "dispatch"); err != nil {
		return nil, err
	}
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

func (hostServices) Emit(ctx context.Context, eventType string, data json.RawMessage) (uint64, error) {
	if err := ended(ctx, "emit"); err != nil {
		return 0, err
	}
	e := newEncoder(32 + len(eventType) + len(data))
	e.keyRaw("event_type", eventType, "data", data)
	return seqCall("emit", hostEmit, &e)
}

func (hostServices) Telemetry(ctx context.Context, record json.RawMessage) error {
	if err := ended(ctx, "telemetry"); err != nil {
		return err
	}
	_, err := call("telemetry", hostTelemetry, record)
	return err
}

func (hostServices) Events(ctx context.Context, after uint64) (page api.EventPage, err error) {
	if err := ended(ctx, "events"); err != nil {
		return page, err
	}
	e := newEncoder(20)
	e.Uint(after)
	d, err := send("events", hostEvents, &e)
	if err != nil {
		return page, err
	}
	d.eventPage(&page)
	return page, answered("events", &d)
}

func (hostServices) SetTranscript(ctx context.Context, messages []api.Message) (uint64, error) {
	if err := ended(ctx, "set_transcript"); err != nil {
		return 0, err
	}
	if messages == nil {
		messages = []api.Message{}
	}
	e := newEncoder(sizeMessages(messages))
	e.messages(messages)
	return seqCall("set_transcript", hostSetTranscript, &e)
}

func (hostServices) KVRead(ctx context.Context, key string) (json.RawMessage, bool, error) {
	if err := ended(ctx, "kv_read"); err != nil {
		return nil, false, err
	}
	e := newEncoder(len(key) + 8)
	e.Str(key)
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

func (hostServices) KVPut(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	if err := ended(ctx, "kv_put"); err != nil {
		return 0, err
	}
	if value == nil {
		value = json.RawMessage("null")
	}
	e := newEncoder(24 + len(key) + len(value))
	e.keyRaw("key", key, "value", value)
	return seqCall("kv_put", hostKVPut, &e)
}

func (hostServices) KVDelete(ctx context.Context, key string) (uint64, error) {
	if err := ended(ctx, "kv_delete"); err != nil {
		return 0, err
	}
	e := newEncoder(len(key) + 8)
	e.Str(key)
	return seqCall("kv_delete", hostKVDelete, &e)
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

//go:wasmexport turn
func turn(ptr, n uint32) uint64 {
	o, err := runTurn(ptr, n)
	var e encoder
	if err == nil {
		e = newEncoder(len(o.Result) + 16)
		e.turnOutput(&o)
		if e.Err != nil {
			err = fmt.Errorf("agentloop: answer: %w", e.Err)
		}
	}
	if err != nil {
		var ref uint32
		var he *HostError
		if errors.As(err, &he) {
			ref = he.Ref
		}
		// The host records no more of the message than this; a longer
		// one would cost the memory to encode it and could push the
		// answer past what the host reads, losing the error's code.
		msg := guestabi.ClipMessage(err.Error())
		e = newEncoder(len(msg) + 48)
		e.turnError(msg, ref)
	}
	return guestabi.Answer(e.B)
}

func runTurn(ptr, n uint32) (o api.TurnOutput, err error) {
	raw, ok := guestabi.Input(ptr, n)
	if !ok {
		return o, errors.New("agentloop: turn input is not in the buffer brain_alloc answered")
	}
	if exported == nil {
		return o, errors.New("agentloop: the module exports no loop (call agentloop.Export in an init function)")
	}
	var in api.TurnInput
	d := newDecoder(raw)
	d.turnInput(&in)
	if err := d.End(); err != nil {
		return o, fmt.Errorf("agentloop: turn input: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentloop panicked: %v", r)
		}
	}()
	return exported(context.Background(), hostServices{}, in)
}

// sizeMessages estimates the encoded size of ms.
func sizeMessages(ms []api.Message) int {
	n := 2
	for _, m := range ms {
		n += 32 + len(m.Role)
		for _, c := range m.Content {
			n += 48 + len(c.Type) + len(c.Text) + len(c.URL) + len(c.MediaType) + len(c.Format) + len(c.Data) +
				len(c.ID) + len(c.Name) + len(c.Input) + len(c.ToolUseID) + len(c.Content) + 64*len(c.Media)
		}
	}
	return n
}
