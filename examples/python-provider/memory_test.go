package pythonprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestMemoryIsBounded: the provider remembers the latest
// --max-remembered executes it dispatched (or whose cancel came first)
// and the latest as many torn-down bindings, so that its memory stays
// bounded however long it serves. A repeat of a recent execute answers
// unknown without running, and one of a recently torn-down binding
// answers that it was torn down; older ones are forgotten: a repeat of
// the oldest execute runs again, and the oldest torn-down binding is one
// not set up here.
func TestMemoryIsBounded(t *testing.T) {
	const remembered = 4
	url := startProvider(t, "provider.py", "--max-remembered", fmt.Sprint(remembered))
	ctx := context.Background()
	post := func(cmd envapi.Command) envapi.Receipt {
		t.Helper()
		status, body, resp, err := envtest.Post(ctx, nil, url, token, cmd)
		if err != nil || status != 200 {
			t.Fatalf("%s: %d %s %v", cmd.Operation.Request.Type, status, body, err)
		}
		return resp.Receipt
	}
	cmds := envtest.NewCommands("s-memory", "box")
	if r := post(cmds.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v", r)
	}
	var executes []envapi.Command
	for i := range 3 * remembered {
		cmd := cmds.Execute(json.RawMessage(`{"name":"echo"}`), json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), nil)
		if r := post(cmd); r.Type != envapi.ReceiptResult {
			t.Fatalf("execute %d: %+v", i, r)
		}
		executes = append(executes, cmd)
	}
	if r := post(executes[len(executes)-1]); r.Type != envapi.ReceiptUnknown {
		t.Fatalf("the latest execute sent again answered %+v, want unknown: it was dispatched", r)
	}
	if r := post(executes[0]); r.Type != envapi.ReceiptResult {
		t.Fatalf("the oldest execute sent again answered %+v, want it forgotten past the latest %d", r, remembered)
	}
	// Cancels whose executes never came are remembered the same way.
	for range 3 * remembered {
		if r := post(cmds.Cancel(cmds.Reserve())); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("cancel: %+v", r)
		}
	}
	if r := post(executes[1]); r.Type != envapi.ReceiptResult {
		t.Fatalf("an old execute sent again after many cancels answered %+v, want it forgotten", r)
	}

	var bindings []*envtest.Commands
	for i := range 3 * remembered {
		b := envtest.NewCommands(fmt.Sprintf("s-gone-%d", i), "box")
		if r := post(b.Setup(nil)); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("setup %d: %+v", i, r)
		}
		if r := post(b.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown %d: %+v", i, r)
		}
		bindings = append(bindings, b)
	}
	latest := post(bindings[len(bindings)-1].Execute(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{}`), nil))
	if latest.Type != envapi.ReceiptFailure || latest.Code != "unavailable" || !strings.Contains(latest.Message, "torn down") {
		t.Fatalf("execute on the latest torn-down binding answered %+v, want unavailable: torn down", latest)
	}
	oldest := post(bindings[0].Execute(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{}`), nil))
	if oldest.Type != envapi.ReceiptFailure || oldest.Code != "unavailable" || strings.Contains(oldest.Message, "torn down") {
		t.Fatalf("execute on the oldest torn-down binding answered %+v, want unavailable: not set up, forgotten past the latest %d", oldest, remembered)
	}
}
