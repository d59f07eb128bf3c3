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

// errorResultNeedsContent answers as the Messages API does a request
// holding a tool_result with is_error true and no content; any other
// request gets next.
func errorResultNeedsContent(next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		var body struct {
			Messages []struct {
				Content []struct {
					Type    string          `json:"type"`
					IsError bool            `json:"is_error"`
					Content json.RawMessage `json:"content"`
				} `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Raw, &body)
		for i, m := range body.Messages {
			for j, b := range m.Content {
				var s string
				empty := len(b.Content) == 0 || string(b.Content) == "[]" || (json.Unmarshal(b.Content, &s) == nil && strings.TrimSpace(s) == "")
				if b.Type == "tool_result" && b.IsError && empty {
					status(http.StatusBadRequest, mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
						"message": fmt.Sprintf("messages.%d.content.%d.tool_result: content cannot be empty if `is_error` is true", i, j)},
						"request_id": "req_011CZ2p9jXx7pYk4wR1vM3Qa"}))(w, r)
					return
				}
			}
		}
		next(w, r)
	}
}

// TestAnthropicErrorResultWithoutText: a failed tool result whose content
// has no text (an empty JSON string, or none) is sent with its JSON text,
// not as an empty content the Messages API refuses, which would fail every
// later call of the conversation.
func TestAnthropicErrorResultWithoutText(t *testing.T) {
	for name, tc := range map[string]struct {
		content json.RawMessage
		want    string
	}{
		"empty-string": {json.RawMessage(`""`), `""`},
		"blank-string": {json.RawMessage(`" "`), `" "`},
		"absent":       {nil, `null`},
	} {
		t.Run(name, func(t *testing.T) {
			f, c := open(t, anthropicDialect, Limits{})
			f.set(errorResultNeedsContent(sse(renderAnthropic(turn{text: []string{"The tool failed."}, stop: api.StopEndTurn, in: 300, out: 4}))))
			msgs := []api.Message{
				api.UserMessage(api.UserInput{Message: "Weather in Paris?"}),
				{Role: api.RoleAssistant, Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
				{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("toolu_01A09q90qw90lq917835lq9", tc.content, true)}},
			}
			if _, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool}, Messages: msgs}, nil); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(f.last(t).Body["messages"].([]any)[2])
			sameJSON(t, got, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":`+mustJSON(tc.want)+`,"is_error":true}]}`)
		})
	}
}
