package builtin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
)

// A model that names a tool the session does not have gets an error
// result naming it and a chance to answer, as it would from a tool that
// failed: the turn does not fail.
func TestDefaultLoopAnswersUnknownTool(t *testing.T) {
	e := agentlooptest.Start(t)
	sid := e.Create(t, e.Admit(t, builtin.DefaultWasm()), nil)
	script := `{"tool_calls":[{"name":"no_such_tool","input":{"q":1}}],"reply":"recovered"}`
	if _, err := e.Send(context.Background(), sid, script); err != nil {
		t.Fatalf("the turn failed: %v", err)
	}
	if got := string(e.Result(t, sid)); got != `"recovered"` {
		t.Fatalf("result = %s", got)
	}
	msgs := e.Transcript(t, sid)
	if len(msgs) != 4 {
		t.Fatalf("transcript has %d messages: %+v", len(msgs), msgs)
	}
	res := msgs[2].Content
	if len(res) != 1 || res[0].Type != api.BlockToolResult || res[0].ToolUseID != "call_1" ||
		res[0].IsError == nil || !*res[0].IsError || !strings.Contains(string(res[0].Content), "no_such_tool") {
		t.Fatalf("tool result = %+v (content %s)", res, res[0].Content)
	}
	for _, ev := range e.Events(t, sid) {
		if ev.EventType == api.KindToolCallStarted {
			t.Fatalf("a call to an unknown tool was dispatched: %s", ev.Data)
		}
	}
}
