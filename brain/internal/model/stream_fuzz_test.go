package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// FuzzProviderAnswers sends any bytes, as a provider's event stream or as
// its error body with any status, over loopback HTTP to each dialect's
// client. The client answers a result or an error, never a panic; an
// error never carries the API key (a provider may echo it); a result's
// stop reason is one Brain knows, its text is UTF-8 and every tool call's
// input is a JSON object.
func FuzzProviderAnswers(f *testing.F) {
	var (
		mu     sync.Mutex
		status int
		body   []byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st, b := status, body
		mu.Unlock()
		if st == http.StatusOK {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(st)
		_, _ = w.Write(b)
	}))
	f.Cleanup(srv.Close)
	p, err := New(Config{OpenAIBaseURL: srv.URL + "/v1", AnthropicBaseURL: srv.URL + "/v1/",
		Limits: Limits{Timeout: 5 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	clients := make([]Client, len(dialects))
	for i, d := range dialects {
		if clients[i], err = p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: testKey}); err != nil {
			f.Fatal(err)
		}
	}
	for i, d := range dialects {
		tr := turn{text: []string{"Let me", " check."}, calls: []fakeCall{{id: "call_1", name: "get_weather", args: []string{`{"city":`, ` "Paris"}`}}},
			stop: api.StopToolUse, in: 100, cached: 20, out: 7}
		f.Add(uint8(i), uint16(200), []byte(d.render(tr)))
		f.Add(uint8(i), uint16(200), []byte(withEndings(d.render(tr), "\r")))
		f.Add(uint8(i), uint16(200), []byte(withEndings(d.render(tr), "\r\n")))
		f.Add(uint8(i), uint16(200), []byte(d.render(turn{text: []string{"Hi ", testKey}, stop: api.StopEndTurn, in: 1, out: 1})))
		f.Add(uint8(i), uint16(200), []byte(d.streamError("server_error", "echoing "+testKey)))
		f.Add(uint8(i), uint16(200), []byte(d.truncated()))
		f.Add(uint8(i), uint16(200), []byte(d.render(turn{calls: []fakeCall{{id: "call_" + testKey, args: []string{`{}`}}}, stop: api.StopToolUse})))
		f.Add(uint8(i), uint16(200), []byte(d.render(turn{calls: []fakeCall{{id: "call_1", name: testKey, args: []string{`[]`}}}, stop: api.StopToolUse})))
		f.Add(uint8(i), uint16(400), []byte(d.errorBody("invalid_request_error", "bad key "+testKey)))
		f.Add(uint8(i), uint16(429), []byte(d.errorBody("rate_limit_exceeded", "slow down")))
		f.Add(uint8(i), uint16(429), []byte(d.errorBody("request_too_large", "too large "+testKey)))
		f.Add(uint8(i), uint16(200), []byte(event("", map[string]any{"error": map[string]any{"code": 503, "message": "Loading model " + testKey, "type": "unavailable_error"}})))
	}
	known := []api.StopReason{api.StopEndTurn, api.StopToolUse, api.StopMaxTokens, api.StopStopSequence, api.StopRefusal, api.StopUnknown}
	f.Fuzz(func(t *testing.T, which uint8, st uint16, b []byte) {
		if st < 200 || st > 599 || (st >= 300 && st < 400) {
			st = 200
		}
		mu.Lock()
		status, body = int(st), b
		mu.Unlock()
		req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})},
			Tools: []api.ToolDefinition{weatherTool}}
		res, err := clients[int(which)%len(clients)].Call(context.Background(), req, func(Delta) {})
		if err != nil {
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("the error carries the API key: %v", err)
			}
			var pe *ProviderError
			if errors.As(err, &pe) && strings.Contains(pe.Message, testKey) {
				t.Fatalf("the provider error's message carries the API key: %q", pe.Message)
			}
			return
		}
		if st != 200 {
			t.Fatalf("status %d answered a result %+v", st, res)
		}
		if !slices.Contains(known, res.StopReason) {
			t.Fatalf("stop reason %q", res.StopReason)
		}
		for _, c := range res.Message.Content {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("text %q is not UTF-8", c.Text)
			}
			if c.Type == api.BlockToolUse {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(c.Input, &obj); err != nil || obj == nil {
					t.Fatalf("tool call %q input %s is not a JSON object: %v", c.Name, c.Input, err)
				}
			}
		}
	})
}
