package model

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A tool_use block may arrive whole in content_block_start, its input
// already filled and no input_json_delta after it (as the official SDKs
// accumulate it, the input of the start stands until a non-empty delta
// arrives). Its input is kept, not replaced by {}.
func TestAnthropicToolInputInBlockStart(t *testing.T) {
	const stream = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{"city": "Paris",  "unit":"c"}}}` + "\n\n" +
		"event: content_block_stop\n" +
		`data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01AbCdEfGhIjKlMnOpQrStUv","name":"get_weather","input":{"city":"Rome"}}}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
		"event: content_block_stop\n" +
		`data: {"type":"content_block_stop","index":1}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01ZyXwVuTsRqPoNmLkJiHgFe","name":"get_weather","input":{"city":"Oslo"}}}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Lima\"}"}}` + "\n\n" +
		"event: content_block_stop\n" +
		`data: {"type":"content_block_stop","index":2}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}` + "\n\n" +
		"event: message_stop\n" +
		`data: {"type":"message_stop"}` + "\n\n"
	f, c := open(t, anthropicDialect, Limits{})
	f.set(sse(stream))
	res, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool},
		Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather?"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 3 {
		t.Fatalf("result %+v", res)
	}
	for i, want := range []string{`{"city":"Paris","unit":"c"}`, `{"city":"Rome"}`, `{"city":"Lima"}`} {
		b := res.Message.Content[i]
		if b.Type != api.BlockToolUse || b.Name != "get_weather" || string(b.Input) != want {
			t.Errorf("call %d = %s %s %s, want input %s", i, b.Type, b.Name, b.Input, want)
		}
	}
}
