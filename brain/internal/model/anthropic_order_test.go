package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// requiresToolResultsFirst answers as the Messages API does a request in which the
// user message after an assistant tool_use does not begin with the
// tool_result blocks; any other request gets next.
func requiresToolResultsFirst(next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Raw, &body)
		for i, m := range body.Messages {
			if m.Role != "assistant" {
				continue
			}
			for _, b := range m.Content {
				if b.Type != "tool_use" {
					continue
				}
				answered := false
				if i+1 < len(body.Messages) {
					for _, n := range body.Messages[i+1].Content {
						if n.Type != "tool_result" {
							break
						}
						answered = answered || n.ToolUseID == b.ID
					}
				}
				if !answered {
					status(http.StatusBadRequest, mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
						"message": fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, b.ID)},
						"request_id": "req_011Cak2XdJgnzxKCY2BC2Beh"}))(w, r)
					return
				}
			}
		}
		next(w, r)
	}
}

// TestAnthropicToolResultsLeadTheirTurn: a developer note between a tool
// call and its result joins the user turn after the tool_result blocks,
// which the Messages API requires first.
func TestAnthropicToolResultsLeadTheirTurn(t *testing.T) {
	f, c := open(t, anthropicDialect, Limits{})
	f.set(requiresToolResultsFirst(sse(renderAnthropic(turn{text: []string{"21 °C."}, stop: api.StopEndTurn, in: 300, out: 4}))))
	msgs := []api.Message{
		api.UserMessage(api.UserInput{Message: "Weather in Paris?"}),
		{Role: api.RoleAssistant, Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: api.RoleDeveloper, Content: []api.ContentBlock{api.TextBlock("Answer in Celsius.")}},
		{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("toolu_01A09q90qw90lq917835lq9", json.RawMessage(`{"temp_c":21}`), false)}},
	}
	if _, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool}, Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.last(t).Body["messages"].([]any)[2])
	sameJSON(t, got, `{"role":"user","content":[
	 {"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":"{\"temp_c\":21}"},
	 {"type":"text","text":"Answer in Celsius."}]}`)
}
