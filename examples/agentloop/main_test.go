package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// TestLoopInWasm builds this program to Wasm, admits it, and runs turns
// through a session engine with a file journal: the counter lives in the
// session's KV, so it survives fresh instances and a restart.
func TestLoopInWasm(t *testing.T) {
	module := agentlooptest.Build(t, ".")
	e := agentlooptest.Start(t)
	id := e.Admit(t, module)
	sid := e.Create(t, id, nil)
	ctx := context.Background()

	send := func(msg string, wantTurn int) {
		t.Helper()
		if _, err := e.Send(ctx, sid, msg); err != nil {
			t.Fatal(err)
		}
		var r struct {
			Turn  int    `json:"turn"`
			Reply string `json:"reply"`
		}
		if err := json.Unmarshal(e.Result(t, sid), &r); err != nil {
			t.Fatal(err)
		}
		if r.Turn != wantTurn || r.Reply != "echo: "+msg {
			t.Fatalf("result %+v, want turn %d and reply %q", r, wantTurn, "echo: "+msg)
		}
	}
	send("hello", 1)
	send("again", 2)
	e.Restart(t)
	send("after a restart", 3)

	tr := e.Transcript(t, sid)
	want := []string{"hello", "echo: hello", "again", "echo: again", "after a restart", "echo: after a restart"}
	if len(tr) != len(want) {
		t.Fatalf("transcript has %d messages, want %d", len(tr), len(want))
	}
	for i, m := range tr {
		if m.Text() != want[i] {
			t.Errorf("message %d = %q, want %q", i, m.Text(), want[i])
		}
	}
	var counted []int
	for _, ev := range e.Events(t, sid) {
		if ev.EventType != "counted" {
			continue
		}
		if ev.Origin == nil || ev.Origin.Kind != api.OriginAgentloop {
			t.Errorf("counted event without an agentloop origin: %+v", ev)
		}
		var d struct{ Turn int }
		_ = json.Unmarshal(ev.Data, &d)
		counted = append(counted, d.Turn)
	}
	if len(counted) != 3 || counted[0] != 1 || counted[2] != 3 {
		t.Fatalf("counted events %v", counted)
	}
}
