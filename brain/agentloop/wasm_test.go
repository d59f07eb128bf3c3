//go:build !wasip1

package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// recorder is the service table of one activation: it records every call
// that reaches the host; environments answers its request.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) record(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method)
}

func (r *recorder) Model(context.Context, api.ModelRequest) (api.ModelResult, error) {
	r.record("model")
	return api.ModelResult{Message: api.Message{Role: "assistant", Content: []api.ContentBlock{}}, StopReason: "end_turn"}, nil
}

func (r *recorder) Dispatch(_ context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	r.record("dispatch")
	out := make([]api.ToolReturn, len(calls))
	for i, c := range calls {
		out[i] = api.ToolReturn{CallID: c.CallID, Sequence: uint64(i + 1), Events: []api.Event{}, Finished: true}
	}
	return out, nil
}

func (r *recorder) Emit(context.Context, string, json.RawMessage) (uint64, error) {
	r.record("emit")
	return 1, nil
}

func (r *recorder) Telemetry(context.Context, json.RawMessage) error {
	r.record("telemetry")
	return nil
}

func (r *recorder) Events(context.Context, uint64) (api.EventPage, error) {
	r.record("events")
	return api.EventPage{Events: []api.Event{}}, nil
}

func (r *recorder) SetTranscript(context.Context, []api.Message) (uint64, error) {
	r.record("set_transcript")
	return 1, nil
}

func (r *recorder) KVRead(context.Context, string) (json.RawMessage, bool, error) {
	r.record("kv_read")
	return nil, false, nil
}

func (r *recorder) KVPut(context.Context, string, json.RawMessage) (uint64, error) {
	r.record("kv_put")
	return 1, nil
}

func (r *recorder) KVDelete(context.Context, string) (uint64, error) {
	r.record("kv_delete")
	return 1, nil
}

func (r *recorder) Environments(_ context.Context, req json.RawMessage) (json.RawMessage, error) {
	r.record("environments")
	return req, nil
}

var services = []string{"model", "dispatch", "emit", "telemetry", "events", "set_transcript", "kv_read", "kv_put", "kv_delete", "environments"}

// serviceAnswers is what the test loop answers for an op that calls every
// service under a context it has ended: the error of each call.
type serviceAnswers map[string]struct {
	Message           string
	Canceled, Expired bool
}

// runEnded runs the activation of the test loop for message and answers
// what each service call answered; it fails t if a call reached the host.
func runEnded(t *testing.T, message string) serviceAnswers {
	t.Helper()
	loop := agentlooptest.Loop(t, "testdata/guest")
	rec := &recorder{}
	in := api.TurnInput{Input: &api.UserInput{Message: message}, Transcript: []api.Message{}, KV: map[string]json.RawMessage{}}
	out, err := loop(context.Background(), rec, in)
	if err != nil {
		t.Fatal(err)
	}
	var answers serviceAnswers
	if err := json.Unmarshal(out.Result, &answers); err != nil {
		t.Fatalf("%s: %v", out.Result, err)
	}
	if len(answers) != len(services) {
		t.Fatalf("answers %+v", answers)
	}
	if len(rec.calls) != 0 {
		t.Errorf("the host served %q for an ended context", rec.calls)
	}
	return answers
}

// A service a Wasm loop calls with a context it has cancelled is refused
// in the guest with an error wrapping the context's and its cause, and
// nothing reaches the host: no model call, tool dispatch, event or KV
// write is made for a call the loop gave up.
func TestWasmServicesRefuseACancelledContext(t *testing.T) {
	answers := runEnded(t, "cancelled 0")
	for _, method := range services {
		a := answers[method]
		if !a.Canceled || !strings.Contains(a.Message, "agentloop: "+method+": ") || !strings.Contains(a.Message, "the loop gave up") {
			t.Errorf("%s under a cancelled context answered %+v, want a refusal wrapping context.Canceled and its cause", method, a)
		}
	}
}

// A context whose deadline passed while the loop computed (its timer not
// yet run: the guest has one thread) counts as ended too.
func TestWasmServicesRefuseAnExpiredContext(t *testing.T) {
	answers := runEnded(t, "expired 20")
	for _, method := range services {
		if a := answers[method]; !a.Expired || !strings.Contains(a.Message, "agentloop: "+method+": ") {
			t.Errorf("%s past its context's deadline answered %+v, want a refusal wrapping context.DeadlineExceeded", method, a)
		}
	}
}
