package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestCheckAgreesWithCall: Check refuses, without sending anything,
// exactly the requests Call would refuse as ErrInvalidRequest, so that a
// caller can refuse them before it records a model call as started.
func TestCheckAgreesWithCall(t *testing.T) {
	hi := []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}
	five := int64(5)
	reqs := []Request{
		{Messages: hi},
		{Messages: hi, Options: json.RawMessage(`{"temperature":0.5}`)},
		{Messages: hi, Options: json.RawMessage(`{"seed":1}`)},
		{Messages: hi, Options: json.RawMessage(`{"top_k":3}`)},
		{Messages: hi, Options: json.RawMessage(`{"thinking":{"type":"enabled","budget_tokens":1024}}`)},
		{Messages: hi, Options: json.RawMessage(`[1]`)},
		{Messages: hi, Options: json.RawMessage(`{"operation":"compact"}`)},
		{Messages: hi, Options: json.RawMessage(`{"operation":"compact","temperature":1}`)},
		{Messages: hi, Options: json.RawMessage(`{"operation":"compact"}`), MaxOutputTokens: &five},
		{Messages: hi, Options: json.RawMessage(`{"operation":"delete"}`)},
		{Messages: hi, ResponseFormat: json.RawMessage(`{"type":"json_object"}`)},
		{Messages: hi, ResponseFormat: json.RawMessage(`{"type":"json_schema","schema":{"type":"object"}}`)},
		{Messages: []api.Message{{Role: "system", Content: []api.ContentBlock{api.TextBlock("x")}}}},
		{Messages: []api.Message{{Role: api.RoleUser, Content: []api.ContentBlock{{Type: api.BlockFile, MediaType: "application/pdf", URL: "https://h/a.pdf"}}}}},
		{Messages: []api.Message{{Role: api.RoleUser, Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: "c", Name: "t", Input: json.RawMessage(`{}`)}}}}},
	}
	for _, d := range dialects {
		f, c := fakeClient(t, d.provider, d.model)
		f.set(status(http.StatusBadRequest, d.errorBody("refused", "refused by the fake")))
		refused := 0
		for _, req := range reqs {
			before := len(f.requests())
			checkErr := Check(c, req)
			if n := len(f.requests()) - before; n != 0 {
				t.Fatalf("%s: Check sent %d requests", d.provider, n)
			}
			_, callErr := c.Call(context.Background(), req, nil)
			if checkErr != nil {
				refused++
				if !errors.Is(checkErr, ErrInvalidRequest) {
					t.Errorf("%s %s: Check = %v, want ErrInvalidRequest", d.provider, mustJSON(req), checkErr)
				}
			}
			if (checkErr != nil) != errors.Is(callErr, ErrInvalidRequest) {
				t.Errorf("%s %s: Check = %v, but Call = %v", d.provider, mustJSON(req), checkErr, callErr)
			}
		}
		if refused == 0 || refused == len(reqs) {
			t.Errorf("%s: Check refused %d of %d requests", d.provider, refused, len(reqs))
		}
	}
	if err := Check(Scripted{}, Request{Messages: hi, Options: json.RawMessage(`{"anything":1}`)}); err != nil {
		t.Errorf("Check(Scripted) = %v, want nil", err)
	}
}

// TestOutputBoundBelowOne: a max_output_tokens below 1, which no dialect
// takes, is refused without sending anything.
func TestOutputBoundBelowOne(t *testing.T) {
	for _, d := range dialects {
		f, c := fakeClient(t, d.provider, d.model)
		for _, n := range []int64{0, -1} {
			req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}, MaxOutputTokens: &n}
			if err := Check(c, req); !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("%s: Check(max_output_tokens %d) = %v, want ErrInvalidRequest", d.provider, n, err)
			}
			if _, err := c.Call(context.Background(), req, nil); !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("%s: Call(max_output_tokens %d) = %v, want ErrInvalidRequest", d.provider, n, err)
			}
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("%s: %d requests sent", d.provider, n)
		}
	}
}

// TestToolNamesTheProviderRefuses: OpenAI's Responses API and Anthropic's
// Messages API take tool names of letters, digits, '_' and '-' only (at
// most 64 for OpenAI); a name they would refuse (a Brain identifier may
// also hold '.' and ':') is refused without sending anything. Chat
// Completions, spoken by local servers with rules of their own, sends it.
func TestToolNamesTheProviderRefuses(t *testing.T) {
	hi := []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}
	long := strings.Repeat("a", 65)
	for _, d := range dialects {
		f, c := fakeClient(t, d.provider, d.model)
		for name, refusedBy := range map[string][]string{
			"fs.read":    {ProviderOpenAI, ProviderAnthropic},
			"ns:tool":    {ProviderOpenAI, ProviderAnthropic},
			long:         {ProviderOpenAI},
			"get_time-2": nil,
		} {
			req := Request{Messages: hi, Tools: []api.ToolDefinition{{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}}}
			err := Check(c, req)
			if want := slices.Contains(refusedBy, d.provider); want != errors.Is(err, ErrInvalidRequest) {
				t.Errorf("%s: Check(tool %q) = %v, want refused %v", d.provider, name, err, want)
			}
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("%s: %d requests sent", d.provider, n)
		}
	}
}

// fakeClient opens a client of provider for model, speaking to a fake
// server of every dialect.
func fakeClient(t *testing.T, provider, model string) (*fake, Client) {
	t.Helper()
	f := newFake(t)
	p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Open(Spec{Provider: provider, Name: model})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}
