package model

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestChatMaxTokensField: OpenAI's own Chat Completions refuses max_tokens
// for its reasoning models and takes max_completion_tokens; a compatible
// server gets max_tokens. api.openai.com is served here by a loopback fake.
func TestChatMaxTokensField(t *testing.T) {
	f := newFake(t)
	stop := "stop"
	f.set(sse(chatChunk(map[string]any{"role": "assistant", "content": "ok"}, nil, nil) + chatChunk(map[string]any{}, &stop, nil) + "data: [DONE]\n\n"))
	fakeAddr := f.srv.Listener.Addr().String()
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, fakeAddr)
	}}}
	_, port, _ := net.SplitHostPort(fakeAddr)
	max := int64(300)
	req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}, MaxOutputTokens: &max}
	for _, tc := range []struct {
		name, base, field, other string
		endpoint                 bool
	}{
		{"openai", "http://api.openai.com:" + port + "/v1", "max_completion_tokens", "max_tokens", false},
		{"azure-openai", "http://my-resource.openai.azure.com:" + port + "/openai/v1", "max_completion_tokens", "max_tokens", true},
		{"compatible", f.srv.URL + "/v1", "max_tokens", "max_completion_tokens", false},
		{"compatible-endpoint", "http://localhost:" + port + "/v1", "max_tokens", "max_completion_tokens", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{HTTPClient: hc}
			provider := ProviderOpenAIChat
			if tc.endpoint {
				provider = "local"
				cfg.Endpoints = []Endpoint{{Name: provider, Dialect: DialectOpenAIChat, BaseURL: tc.base}}
			} else {
				cfg.OpenAIBaseURL = tc.base
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Open(Spec{Provider: provider, Name: "o4-mini", APIKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Call(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got := f.last(t)
			if u, _ := url.Parse(tc.base); got.Path != u.Path+"/chat/completions" {
				t.Errorf("path %q", got.Path)
			}
			if v, ok := got.Body[tc.field].(float64); !ok || v != 300 {
				t.Errorf("%s = %v in %s", tc.field, got.Body[tc.field], got.Raw)
			}
			if _, ok := got.Body[tc.other]; ok {
				t.Errorf("%s sent too: %s", tc.other, got.Raw)
			}
		})
	}
}
