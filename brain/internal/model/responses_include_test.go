package model

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestResponsesEncryptedReasoningOnlyForReasoningModels: the Responses
// client asks for encrypted reasoning (include
// ["reasoning.encrypted_content"]) from models that reason, and not from
// the model families OpenAI refuses it for ("Encrypted content is not
// supported with this model"), which would fail every call.
func TestResponsesEncryptedReasoningOnlyForReasoningModels(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-5": true, "gpt-5-mini": true, "o3": true, "o4-mini": true, "gpt-test": true,
		"gpt-4o": false, "gpt-4.1-mini": false, "gpt-4-turbo": false, "gpt-3.5-turbo": false,
		"chatgpt-4o-latest": false, "gpt-5-chat-latest": false,
	} {
		d := responsesDialect
		d.model = model
		f, c := open(t, d, Limits{})
		f.set(sse(renderResponses(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
		if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}}, nil); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		_, got := f.last(t).Body["include"]
		if got != want {
			t.Errorf("%s: include sent %v, want %v", model, got, want)
		}
	}
}
