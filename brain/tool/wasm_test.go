//go:build !wasip1

package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// recorder is the host's service table for one invocation: it records
// every call that reaches the host.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Call(_ context.Context, method string, in json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method+" "+string(in))
	switch method {
	case envapi.MethodTelemetry:
		return json.RawMessage(`null`), nil
	case envapi.MethodModel:
		return json.RawMessage(`{"message":{"role":"assistant","content":[]},"stop_reason":"end_turn","usage":{}}`), nil
	case envapi.MethodEnvironments:
		return json.RawMessage(`{}`), nil
	}
	return json.RawMessage(`1`), nil
}

// okValue answers the value of the ok outcome of r.
func okValue(t *testing.T, r envapi.Receipt) json.RawMessage {
	t.Helper()
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("receipt %+v", r)
	}
	o, err := envapi.DecodeOutcome(r.Output)
	if err != nil || o.Status != envapi.StatusOK {
		t.Fatalf("outcome %s: %v", r.Output, err)
	}
	return o.Value
}

// serviceAnswers is what the test Tool's op answers: the error of a call
// of each service under an ended context.
type serviceAnswers map[string]struct {
	Message           string
	Canceled, Expired bool
}

// runEnded runs op of the test Tool, which calls every service under a
// context it has ended, and answers what each call answered; it fails t
// if a call reached the host.
func runEnded(t *testing.T, op string) serviceAnswers {
	t.Helper()
	run := agentlooptest.Tool(t, "testdata/guest")
	rec := &recorder{}
	r := run(context.Background(), rec, json.RawMessage(`{"op":"`+op+`"}`))
	var answers serviceAnswers
	if err := json.Unmarshal(okValue(t, r), &answers); err != nil {
		t.Fatal(err)
	}
	if len(answers) != len(services) {
		t.Fatalf("answers %+v", answers)
	}
	if len(rec.calls) != 0 {
		t.Errorf("the host served %q for an ended context", rec.calls)
	}
	return answers
}

var services = []string{"emit", "result", "returned", "finish", "model", "environments", "telemetry"}

// A service called with a context the Tool has cancelled is refused in
// the guest with an error wrapping the context's and its cause, and
// nothing reaches the host: no event, result, model call or control
// request is made for a Tool that gave it up.
func TestServicesRefuseACancelledContext(t *testing.T) {
	answers := runEnded(t, "cancelled")
	for _, method := range services {
		a := answers[method]
		if !a.Canceled || !strings.Contains(a.Message, "tool: "+method+": ") || !strings.Contains(a.Message, "the tool gave up") {
			t.Errorf("%s under a cancelled context answered %+v, want a refusal wrapping context.Canceled and its cause", method, a)
		}
	}
}

// A context whose deadline passed while the Tool computed (its timer not
// yet run: the guest has one thread) counts as ended too.
func TestServicesRefuseAnExpiredContext(t *testing.T) {
	answers := runEnded(t, "expired")
	for _, method := range services {
		if a := answers[method]; !a.Expired || !strings.Contains(a.Message, "tool: "+method+": ") {
			t.Errorf("%s past its context's deadline answered %+v, want a refusal wrapping context.DeadlineExceeded", method, a)
		}
	}
}
