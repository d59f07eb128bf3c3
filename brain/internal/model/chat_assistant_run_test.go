package model

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestChatConsecutiveAssistantMessagesJoin: a transcript that holds a
// model's tool calls as consecutive assistant messages (one call each, as
// a loop that records calls one by one writes them), answered by one user
// message, goes as one assistant message with every call, followed by
// their tool messages: Chat Completions refuses an assistant message with
// tool_calls that is not followed at once by their tool messages.
func TestChatConsecutiveAssistantMessagesJoin(t *testing.T) {
	f, c := open(t, chatDialect, Limits{})
	f.set(requiresToolMessagesNext(sse(renderChat(turn{text: []string{"21 °C and 19 °C."}, stop: api.StopEndTurn, in: 300, out: 8}))))
	msgs := []api.Message{
		api.UserMessage(api.UserInput{Message: "Weather in Paris and Lyon?"}),
		{Role: api.RoleAssistant, Content: []api.ContentBlock{
			api.TextBlock("Checking."),
			{Type: api.BlockToolUse, ID: "call_a", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
		}},
		{Role: api.RoleAssistant, Content: []api.ContentBlock{
			{Type: api.BlockToolUse, ID: "call_b", Name: "get_weather", Input: json.RawMessage(`{"city":"Lyon"}`)},
		}},
		{Role: api.RoleUser, Content: []api.ContentBlock{
			api.ToolResultBlock("call_a", json.RawMessage(`{"temp_c":21}`), false),
			api.ToolResultBlock("call_b", json.RawMessage(`{"temp_c":19}`), false),
		}},
	}
	res, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool}, Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Text() != "21 °C and 19 °C." {
		t.Fatalf("result %+v", res)
	}
	got, _ := json.Marshal(f.last(t).Body["messages"])
	sameJSON(t, got, `[
	 {"role":"user","content":"Weather in Paris and Lyon?"},
	 {"role":"assistant","content":"Checking.","tool_calls":[
	  {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
	  {"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}}]},
	 {"role":"tool","tool_call_id":"call_a","content":"{\"temp_c\":21}"},
	 {"role":"tool","tool_call_id":"call_b","content":"{\"temp_c\":19}"}]`)
}
