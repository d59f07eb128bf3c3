package model

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestResponsesEncryptedReasoningByModelFamily: a fine-tuned model
// ("ft:<base>:<org>::<id>") and a gateway's namespaced one
// ("openai/<base>") belong to the family of their base model, so the
// encrypted reasoning that OpenAI refuses for a family that does not
// reason is not asked of them either.
func TestResponsesEncryptedReasoningByModelFamily(t *testing.T) {
	for model, want := range map[string]bool{
		"ft:gpt-4o-mini-2024-07-18:acme::9aBcDeF1":    false,
		"ft:gpt-4.1-2025-04-14:acme:support:9aBcDeF1": false,
		"openai/gpt-4.1-mini":                         false,
		"openai/gpt-5-mini":                           true,
		"ft:o4-mini-2025-04-16:acme::9aBcDeF1":        true,
	} {
		d := responsesDialect
		d.model = model
		f, c := open(t, d, Limits{})
		f.set(sse(renderResponses(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
		if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}}, nil); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if _, got := f.last(t).Body["include"]; got != want {
			t.Errorf("%s: include sent %v, want %v", model, got, want)
		}
		if got := f.last(t).Body["model"]; got != model {
			t.Errorf("model sent as %v, want %q", got, model)
		}
	}
}
