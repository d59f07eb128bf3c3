package model

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestToolCallErrorHidesKey: a provider that echoes the API key as a tool
// call's id or name, in a call Brain cannot use (no name, or an input that
// is not a JSON object), fails the call model_output_invalid without the
// key in the error, which the session records; an id or name as long as
// the output bound allows is quoted shortened, so the recorded error stays
// short.
func TestToolCallErrorHidesKey(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	cases := []struct {
		name string
		call fakeCall
	}{
		{"id-echoes-key", fakeCall{id: "call_" + testKey, name: "", args: []string{`{}`}}},
		{"name-echoes-key", fakeCall{id: "call_1", name: "get_" + testKey, args: []string{`[1, 2]`}}},
		{"key-after-long-id", fakeCall{id: strings.Repeat("c", 120) + testKey, name: " ", args: []string{`{}`}}},
		{"long-id", fakeCall{id: long, name: "", args: []string{`{}`}}},
		{"long-name", fakeCall{id: "call_1", name: long, args: []string{`"text"`}}},
	}
	for _, d := range dialects {
		f := newFake(t)
		p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			t.Run(d.provider+"/"+tc.name, func(t *testing.T) {
				f.set(sse(d.render(turn{calls: []fakeCall{tc.call}, stop: api.StopToolUse, in: 5, out: 3})))
				req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})},
					Tools: []api.ToolDefinition{weatherTool}}
				_, err := c.Call(context.Background(), req, nil)
				var oe *OutputError
				if !errors.As(err, &oe) || oe.Code != api.CodeModelOutputInvalid {
					t.Fatalf("err = %v, want model_output_invalid", err)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("the error carries the API key: %v", err)
				}
				if len(err.Error()) > 1024 {
					t.Errorf("the error is %d bytes long: %.200s...", len(err.Error()), err.Error())
				}
			})
		}
	}
}
