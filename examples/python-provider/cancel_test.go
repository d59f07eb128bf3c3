package pythonprovider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

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

// TestFinishRefusedAfterCancel: Brain closes a Tool it cancels before it
// sends the cancel, so a finish that reaches it after that is refused
// (401). When the cancel reaches the provider while its finish is on the
// way, the execute answers cancelled, what Brain recorded, not the
// refusal; and a finish refused because the deadline passed on the way
// answers timeout.
func TestFinishRefusedAfterCancel(t *testing.T) {
	url := startProvider(t, "provider.py")
	for _, tc := range []struct {
		name     string
		deadline *int64
		want     string
	}{
		{"cancel", nil, envapi.CodeCancelled},
		{"deadline", envtest.Millis(500), envapi.CodeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := envtest.NewBrain(t)
			cmds := envtest.NewCommands("s-"+tc.name, "box")
			if _, _, resp, err := envtest.Post(ctx, nil, url, token, cmds.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup: %+v %v", resp, err)
			}
			seq := cmds.Reserve()
			g := b.ToolGrant(cmds.Session, seq)
			stopped := make(chan string, 1)
			sent := time.Now() // the execute's deadline starts later
			b.Handle(envapi.MethodFinish, func(envtest.Call) (int, any) {
				if tc.deadline == nil {
					// The cancel is answered before the finish is refused.
					_, body, resp, err := envtest.Post(ctx, nil, url, token, cmds.Cancel(seq))
					if err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
						stopped <- fmt.Sprintf("the cancel answered %s %v", body, err)
					} else {
						stopped <- ""
					}
				} else {
					// The deadline passes while the finish is on the way.
					time.Sleep(time.Until(sent.Add(time.Duration(*tc.deadline+100) * time.Millisecond)))
					stopped <- ""
				}
				return http.StatusUnauthorized, map[string]any{"code": "unauthorized", "message": "the execution is closed", "retryable": false}
			})
			_, body, resp, err := envtest.Post(ctx, nil, url, token,
				cmds.At(seq, envapi.Execute(json.RawMessage(`{"name":"echo"}`), json.RawMessage(`{"n":1}`), tc.deadline, &g)))
			if err != nil {
				t.Fatalf("execute: %s %v", body, err)
			}
			select {
			case problem := <-stopped:
				if problem != "" {
					t.Fatal(problem)
				}
			default:
				t.Fatalf("no finish was sent; the execute answered %s", body)
			}
			if r := resp.Receipt; r.Type != envapi.ReceiptFailure || r.Code != tc.want {
				t.Fatalf("execute whose finish was refused after the %s answered %s, want the failure %s", tc.name, body, tc.want)
			}
		})
	}
}
