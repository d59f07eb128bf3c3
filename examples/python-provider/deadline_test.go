package pythonprovider_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestDeadlinePassedBeforeExecute: an execute whose deadline_ms is 0 (its
// time ran out on the way) answers timeout without running, whatever its
// descriptor: its write never lands and nothing is finished.
func TestDeadlinePassedBeforeExecute(t *testing.T) {
	b, cmds, post := boundProvider(t)
	write := cmds.Execute(json.RawMessage(`{"name":"write"}`), json.RawMessage(`{"key":"k","value":"v"}`), envtest.Millis(0))
	if r := post(write); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("execute past its deadline answered %+v, want the failure timeout", r)
	}
	if calls := b.CallsFor(cmds.Session, write.Operation.Sequence); len(calls) != 0 {
		t.Errorf("the execute past its deadline called its grant: %+v", calls)
	}
	r := post(cmds.Execute(json.RawMessage(`{"name":"read"}`), json.RawMessage(`{"key":"k"}`), nil))
	var read struct {
		Found bool `json:"found"`
	}
	if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &read) != nil || read.Found {
		t.Fatalf("read after the timed-out write answered %+v %s, want found false", r, r.Output)
	}
}
