package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// requiresToolMessagesNext answers as OpenAI Chat Completions does a
// request in which an assistant message with tool_calls is not followed at
// once by a tool message for each of its calls; any other request gets
// next.
func requiresToolMessagesNext(next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		var body struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Raw, &body)
		for i, m := range body.Messages {
			if m.Role != "assistant" || len(m.ToolCalls) == 0 {
				continue
			}
			answered := map[string]bool{}
			for _, n := range body.Messages[i+1:] {
				if n.Role != "tool" {
					break
				}
				answered[n.ToolCallID] = true
			}
			var missing []string
			for _, tc := range m.ToolCalls {
				if !answered[tc.ID] {
					missing = append(missing, tc.ID)
				}
			}
			if len(missing) > 0 {
				status(http.StatusBadRequest, mustJSON(map[string]any{"error": map[string]any{
					"message": fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(missing, ", ")),
					"type":    "invalid_request_error", "param": "messages.[" + fmt.Sprint(i+1) + "].role", "code": nil}}))(w, r)
				return
			}
		}
		next(w, r)
	}
}

// TestChatToolMessagesFollowTheirCall: a message the transcript holds
// between a tool call and its result (a developer note, or the user
// writing while the tool ran) goes after the tool messages, which Chat
// Completions requires right after the assistant message that called.
func TestChatToolMessagesFollowTheirCall(t *testing.T) {
	f, c := open(t, chatDialect, Limits{})
	f.set(requiresToolMessagesNext(sse(renderChat(turn{text: []string{"21 °C, and it is dry."}, stop: api.StopEndTurn, in: 300, out: 8}))))
	msgs := []api.Message{
		api.UserMessage(api.UserInput{Message: "Weather in Paris?"}),
		{Role: api.RoleAssistant, Content: []api.ContentBlock{
			api.TextBlock("Checking."),
			{Type: api.BlockToolUse, ID: "call_a", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			{Type: api.BlockToolUse, ID: "call_b", Name: "get_weather", Input: json.RawMessage(`{"city":"Lyon"}`)},
		}},
		{Role: api.RoleDeveloper, Content: []api.ContentBlock{api.TextBlock("Answer in Celsius.")}},
		api.UserMessage(api.UserInput{Message: "And is it raining?"}),
		{Role: api.RoleUser, Content: []api.ContentBlock{
			api.ToolResultBlock("call_a", json.RawMessage(`{"temp_c":21}`), false),
			api.TextBlock("Lyon is still running."),
		}},
		{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("call_b", json.RawMessage(`{"temp_c":19}`), false)}},
	}
	res, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool}, Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Text() != "21 °C, and it is dry." {
		t.Fatalf("result %+v", res)
	}
	got, _ := json.Marshal(f.last(t).Body["messages"])
	sameJSON(t, got, `[
	 {"role":"user","content":"Weather in Paris?"},
	 {"role":"assistant","content":"Checking.","tool_calls":[
	  {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
	  {"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\"}"}}]},
	 {"role":"tool","tool_call_id":"call_a","content":"{\"temp_c\":21}"},
	 {"role":"tool","tool_call_id":"call_b","content":"{\"temp_c\":19}"},
	 {"role":"system","content":"Answer in Celsius."},
	 {"role":"user","content":"And is it raining?"},
	 {"role":"user","content":"Lyon is still running."}]`)
}
