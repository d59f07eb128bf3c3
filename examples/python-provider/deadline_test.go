package pythonprovider_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestDeadlinePassedBeforeExecute: an execute whose deadline_ms is 0 (its
// time ran out on the way) answers timeout without running, whatever its
// descriptor: its write never lands and nothing is finished.
func TestDeadlinePassedBeforeExecute(t *testing.T) {
	url := startProvider(t, "provider.py")
	b := envtest.NewBrain(t)
	cmds := envtest.NewCommands("s1", "box")
	cmds.Brain = b
	ctx := context.Background()
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(ctx, nil, url, token, cmd)
		if err != nil || status != 200 {
			t.Fatalf("%s: %d %s %v", cmd.Operation.Request.Type, status, body, err)
		}
		return resp.Receipt
	}
	if r := post(cmds.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v", r)
	}
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
