package envsdk_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// killedProvider stops its work when its context ends and answers what it
// saw of it as a failure receipt, as a provider whose process was killed
// reports the exit.
type killedProvider struct {
	envsdk.Base
	started chan struct{}
}

func (p *killedProvider) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	p.started <- struct{}{}
	<-c.Context().Done()
	return envapi.Failure("command_failed", "exit status 137", false, json.RawMessage(`{"signal":"KILL"}`)), nil
}

// A failure receipt the provider answers once its execute was stopped is
// answered as the stop, timeout or cancelled, as a failure returned as an
// error is: the first stop cause is the code, and the provider's failure
// is kept as evidence in details.
func TestFailureReceiptAfterStopKeepsTheStop(t *testing.T) {
	ms := int64(30)
	for _, tc := range []struct {
		name     string
		deadline *int64
		stop     func(t *testing.T, srv *httptest.Server)
		want     string
	}{
		{"after the deadline", &ms, func(*testing.T, *httptest.Server) {}, envapi.CodeTimeout},
		{"after a cancel", nil, func(t *testing.T, srv *httptest.Server) {
			if r := send(t, srv, command(6, envapi.Cancel(5))).Receipt; r.Type != envapi.ReceiptAccepted {
				t.Fatalf("cancel answered %+v", r)
			}
		}, envapi.CodeCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &killedProvider{started: make(chan struct{}, 1)}
			srv := serve(t, p, nil)
			result := make(chan envapi.Receipt, 1)
			go func() { result <- send(t, srv, execute(5, "x", tc.deadline, nil)).Receipt }()
			<-p.started
			tc.stop(t, srv)
			r := <-result
			if r.Type != envapi.ReceiptFailure || r.Code != tc.want {
				t.Fatalf("a killed execute %s answered %+v, want failure %s", tc.name, r, tc.want)
			}
			var ev struct {
				Error   string          `json:"error"`
				Code    string          `json:"code"`
				Details json.RawMessage `json:"details"`
			}
			if err := json.Unmarshal(r.Details, &ev); err != nil || ev.Code != "command_failed" || ev.Error != "exit status 137" || string(ev.Details) != `{"signal":"KILL"}` {
				t.Fatalf("details %s do not keep the provider's failure as evidence", r.Details)
			}
		})
	}
}

// An execute whose deadline_ms is 0 (its time ran out on the way) answers
// timeout without running: its effects never happen, and nothing is
// finished.
func TestDeadlinePassedOnArrivalRunsNothing(t *testing.T) {
	b := newFakeBrain(t)
	p := newTestProvider()
	srv := serve(t, p, nil)
	zero := int64(0)
	r := send(t, srv, execute(4, "echo", &zero, b.grant(envapi.ToolMethods()...))).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("an execute whose deadline had passed answered %+v, want failure timeout", r)
	}
	if n := p.calls.Load(); n != 0 {
		t.Fatalf("the provider ran %d times for an execute whose deadline had passed", n)
	}
	if n := b.count(envapi.MethodFinish); n != 0 {
		t.Fatalf("finish sent %d times", n)
	}
}
