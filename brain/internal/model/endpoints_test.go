package model

import (
	"context"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestEndpoints opens providers added by Config.Endpoints: each speaks its
// dialect at its own base URL, with the operator's key for its name.
func TestEndpoints(t *testing.T) {
	dialectOf := map[string]string{
		ProviderOpenAI: DialectOpenAIResponses, ProviderOpenAIChat: DialectOpenAIChat, ProviderAnthropic: DialectAnthropic,
	}
	for _, d := range dialects {
		t.Run(dialectOf[d.provider], func(t *testing.T) {
			f := newFake(t)
			p, err := New(Config{
				Endpoints:      []Endpoint{{Name: "gateway", Dialect: dialectOf[d.provider], BaseURL: f.srv.URL + "/v1/"}},
				DefaultAPIKeys: map[string]string{"gateway": testKey},
			})
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Open(Spec{Provider: "gateway", Name: d.model})
			if err != nil {
				t.Fatal(err)
			}
			f.set(sse(d.render(turn{text: []string{"hi"}, stop: api.StopEndTurn, in: 1, out: 1})))
			res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := f.last(t)
			if r.Method != http.MethodPost || r.Path != d.path || r.Body["model"] != d.model {
				t.Errorf("request %s %s model %v, want POST %s model %s", r.Method, r.Path, r.Body["model"], d.path, d.model)
			}
			d.checkAuth(t, r.Header, testKey)
			if res.Message.Content[0].Text != "hi" {
				t.Errorf("result %+v", res.Message)
			}
		})
	}
	// An endpoint replaces the built-in provider of its name.
	f := newFake(t)
	p, err := New(Config{Endpoints: []Endpoint{{Name: ProviderOpenAI, Dialect: DialectOpenAIChat, BaseURL: f.srv.URL + "/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := p.Open(Spec{Provider: ProviderOpenAI, Name: "m"})
	f.set(sse(chatDialect.render(turn{text: []string{"ok"}, stop: api.StopEndTurn, in: 1, out: 1})))
	if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Path != "/v1/chat/completions" {
		t.Errorf("replaced openai posted to %s, want the endpoint's chat completions", r.Path)
	}
	for _, bad := range []Endpoint{
		{Name: "x", Dialect: "smoke_signals", BaseURL: "http://127.0.0.1:1"},
		{Name: "x", Dialect: DialectOpenAIChat, BaseURL: ""},
		{Name: "x", Dialect: DialectOpenAIChat, BaseURL: "http://u:p@host"},
		{Name: ProviderScripted, Dialect: DialectOpenAIChat, BaseURL: "http://127.0.0.1:1"},
		{Name: "", Dialect: DialectOpenAIChat, BaseURL: "http://127.0.0.1:1"},
	} {
		if _, err := New(Config{Endpoints: []Endpoint{bad}}); err == nil {
			t.Errorf("endpoint %+v accepted", bad)
		}
	}
}
