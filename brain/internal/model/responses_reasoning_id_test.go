package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// reasoningPairing answers as the Responses API does an input in which a
// reasoning item that names its id is not followed by the output item it
// led to (an item naming its own id); any other request gets next.
func reasoningPairing(next func(http.ResponseWriter, *recorded)) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, r *recorded) {
		var body struct {
			Input []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			} `json:"input"`
		}
		_ = json.Unmarshal(r.Raw, &body)
		for i, it := range body.Input {
			if it.Type == "reasoning" && it.ID != "" && (i+1 == len(body.Input) || body.Input[i+1].ID == "") {
				status(http.StatusBadRequest, mustJSON(map[string]any{"error": map[string]any{
					"message": fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", it.ID),
					"type":    "invalid_request_error", "param": "input", "code": nil}}))(w, r)
				return
			}
		}
		next(w, r)
	}
}

// TestResponsesReasoningReplayedWithoutID: a reasoning item goes back
// with its encrypted content but without its id, as the answer's message
// and function calls go back without theirs, so that the stateless request
// is not refused for an item whose pair it does not name.
func TestResponsesReasoningReplayedWithoutID(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	reasoning := map[string]any{"id": "rs_6820f383d7c08191846711c5df8233bc", "type": "reasoning", "summary": []any{}, "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukE"}
	call := map[string]any{"id": "fc_1", "type": "function_call", "status": "completed", "arguments": `{"city":"Paris"}`, "call_id": "call_1", "name": "get_weather"}
	usage := map[string]any{"input_tokens": 50, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 90, "output_tokens_details": map[string]any{"reasoning_tokens": 64}, "total_tokens": 140}
	f.set(sse(event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
		event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 1, "output_index": 0, "item": reasoning}) +
		event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 1, "item": call}) +
		event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 3, "response": responsesEnvelope("completed", []any{reasoning, call}, nil, usage)})))
	req := Request{Tools: []api.ToolDefinition{weatherTool}, Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})}}
	res, err := c.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 2 {
		t.Fatalf("result %+v", res)
	}
	// The transcript keeps the item as the provider answered it.
	sameJSON(t, res.Message.Content[0].Data, mustJSON(reasoning))
	req.Messages = append(req.Messages, res.Message, api.Message{Role: api.RoleUser, Content: []api.ContentBlock{
		api.ToolResultBlock("call_1", json.RawMessage(`{"temp_c":21}`), false)}})
	f.set(reasoningPairing(sse(renderResponses(turn{text: []string{"Sunny."}, stop: api.StopEndTurn}))))
	if _, err := c.Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.last(t).Body["input"])
	sameJSON(t, got, `[
	 {"role":"user","content":[{"type":"input_text","text":"Weather in Paris?"}]},
	 {"type":"reasoning","summary":[],"encrypted_content":"gAAAAABoISQ24OyVRYbkYfukE"},
	 {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
	 {"type":"function_call_output","call_id":"call_1","output":"{\"temp_c\":21}"}]`)
}
