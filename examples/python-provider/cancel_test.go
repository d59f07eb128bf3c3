package pythonprovider_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// boundProvider starts provider.py with one binding set up, and answers
// the fake Brain of its grants, the binding's commands and a function
// that posts a command and answers its receipt.
func boundProvider(t *testing.T) (*envtest.Brain, *envtest.Commands, func(envapi.Command) envapi.Receipt) {
	t.Helper()
	url := startProvider(t, "provider.py")
	b := envtest.NewBrain(t)
	cmds := envtest.NewCommands("s1", "box")
	cmds.Brain = b
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(context.Background(), nil, url, token, cmd)
		if err != nil || status != 200 {
			t.Fatalf("%s: %d %s %v", cmd.Operation.Request.Type, status, body, err)
		}
		return resp.Receipt
	}
	if r := post(cmds.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v", r)
	}
	return b, cmds, post
}

// TestCancelBeforeExecute: Brain sends an execute and its cancel once
// each, on connections of their own, so the cancel may arrive first. The
// provider keeps it: the execute, when it comes, answers cancelled
// without running, so its write never lands and nothing is finished.
func TestCancelBeforeExecute(t *testing.T) {
	b, cmds, post := boundProvider(t)
	write := cmds.Reserve()
	if r := post(cmds.Cancel(write)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel: %+v", r)
	}
	g := b.ToolGrant(cmds.Session, write)
	r := post(cmds.At(write, envapi.Execute(json.RawMessage(`{"name":"write"}`), json.RawMessage(`{"key":"k","value":"v"}`), nil, &g)))
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
		t.Fatalf("execute after its cancel answered %+v, want the failure cancelled", r)
	}
	if calls := b.CallsFor(cmds.Session, write); len(calls) != 0 {
		t.Errorf("the cancelled execute called its grant: %+v", calls)
	}
	r = post(cmds.Execute(json.RawMessage(`{"name":"read"}`), json.RawMessage(`{"key":"k"}`), nil))
	var read struct {
		Found bool `json:"found"`
	}
	if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &read) != nil || read.Found {
		t.Fatalf("read after the cancelled write answered %+v %s, want found false", r, r.Output)
	}
}
