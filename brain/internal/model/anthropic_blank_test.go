package model

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// blankTextRejected answers as the Messages API does a request holding a
// message whose text blocks are all whitespace; any other request gets
// next.
func blankTextRejected(next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		var body struct {
			Messages []struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Raw, &body)
		for _, m := range body.Messages {
			texts, blank := 0, 0
			for _, b := range m.Content {
				if b.Type == "text" {
					texts++
					if strings.TrimSpace(b.Text) == "" {
						blank++
					}
				}
			}
			if texts > 0 && texts == blank {
				status(http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must contain non-whitespace text"},"request_id":"req_011CXq5w8SjiNsvRUx5V8tsY"}`)(w, r)
				return
			}
		}
		next(w, r)
	}
}

// TestAnthropicBlankTextNotReplayed: an answer whose text is only
// whitespace before its tool call (as Claude sometimes writes) is kept as
// answered, and the next request of the conversation is not refused for
// replaying it.
func TestAnthropicBlankTextNotReplayed(t *testing.T) {
	f, c := open(t, anthropicDialect, Limits{})
	f.set(blankTextRejected(sse(renderAnthropic(turn{
		text:  []string{"\n\n"},
		calls: []fakeCall{{id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", args: []string{`{"city": "Paris"}`}}},
		stop:  api.StopToolUse, in: 400, out: 40,
	}))))
	req := Request{Tools: []api.ToolDefinition{weatherTool},
		Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})}}
	res, err := c.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 2 {
		t.Fatalf("result %+v", res)
	}
	req.Messages = append(req.Messages, res.Message,
		api.Message{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("toolu_01A09q90qw90lq917835lq9", json.RawMessage(`{"temp_c":21}`), false)}},
	)
	f.set(blankTextRejected(sse(renderAnthropic(turn{text: []string{"Sunny."}, stop: api.StopEndTurn, in: 500, out: 3}))))
	res, err = c.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Text() != "Sunny." {
		t.Fatalf("result %+v", res)
	}
	got, _ := json.Marshal(f.last(t).Body["messages"].([]any)[1])
	sameJSON(t, got, `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"city":"Paris"}}]}`)
}
