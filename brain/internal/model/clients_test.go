package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

const testKey = "sk-test-SECRET-7f3a9c"

// open starts a fake for d and opens its client with limits.
func open(t *testing.T, d dialect, limits Limits) (*fake, Client) {
	t.Helper()
	f := newFake(t)
	p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1/", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

var weatherTool = api.ToolDefinition{
	Name: "get_weather", Description: "Look up the weather",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

func usageOf(in, cacheRead, total, out int64) Usage {
	return Usage{InputTokens: &in, CacheReadInputTokens: &cacheRead, TotalInputTokens: &total, OutputTokens: &out}
}

// sameUsage compares the fields every dialect reports.
func sameUsage(t *testing.T, got, want Usage) {
	t.Helper()
	v := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	if v(got.InputTokens) != v(want.InputTokens) || v(got.CacheReadInputTokens) != v(want.CacheReadInputTokens) ||
		v(got.TotalInputTokens) != v(want.TotalInputTokens) || v(got.OutputTokens) != v(want.OutputTokens) {
		t.Errorf("usage in=%d cacheRead=%d total=%d out=%d, want in=%d cacheRead=%d total=%d out=%d",
			v(got.InputTokens), v(got.CacheReadInputTokens), v(got.TotalInputTokens), v(got.OutputTokens),
			v(want.InputTokens), v(want.CacheReadInputTokens), v(want.TotalInputTokens), v(want.OutputTokens))
	}
}

// TestConversation runs one scripted conversation through every client:
// a streamed text and tool call, then the tool result and a final answer.
func TestConversation(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := open(t, d, Limits{})
			sys := "You are terse."
			req := Request{
				System:   &sys,
				Tools:    []api.ToolDefinition{weatherTool},
				Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris?"})},
			}
			f.set(sse(d.render(turn{
				text:  []string{"Let me", " check."},
				calls: []fakeCall{{id: "call_1", name: "get_weather", args: []string{`{"city":`, ` "Paris"}`}}},
				stop:  api.StopToolUse, in: 100, cached: 20, out: 7,
			})))
			var deltas []string
			res, err := c.Call(context.Background(), req, func(d Delta) { deltas = append(deltas, d.Text) })
			if err != nil {
				t.Fatal(err)
			}
			r := f.last(t)
			if r.Method != http.MethodPost || r.Path != d.path {
				t.Errorf("request %s %s, want POST %s", r.Method, r.Path, d.path)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			d.checkAuth(t, r.Header, testKey)
			if r.Body["stream"] != true || r.Body["model"] != d.model {
				t.Errorf("stream/model: %s", r.Raw)
			}
			if strings.Join(deltas, "") != "Let me check." || len(deltas) != 2 {
				t.Errorf("deltas %q", deltas)
			}
			want := api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{
				api.TextBlock("Let me check."),
				{Type: api.BlockToolUse, ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			}}
			if !reflect.DeepEqual(res.Message, want) || res.StopReason != api.StopToolUse {
				t.Fatalf("result %+v stop %q", res.Message, res.StopReason)
			}
			sameUsage(t, res.Usage, usageOf(80, 20, 100, 7))

			req.Messages = append(req.Messages, res.Message, api.Message{Role: api.RoleUser, Content: []api.ContentBlock{
				api.ToolResultBlock("call_1", json.RawMessage(`{"temp_c":21}`), false),
			}})
			f.set(sse(d.render(turn{text: []string{"Sunny, 21 °C."}, stop: api.StopEndTurn, in: 130, out: 5})))
			res, err = c.Call(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Text() != "Sunny, 21 °C." || res.StopReason != api.StopEndTurn || len(res.Message.Content) != 1 {
				t.Fatalf("second answer %+v %q", res.Message, res.StopReason)
			}
			sameUsage(t, res.Usage, usageOf(130, 0, 130, 5))
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
	}
}

// TestStopReasons: every dialect's stop maps onto Brain's, and the rules
// for tool calls in unfinished or invalid answers hold.
func TestStopReasons(t *testing.T) {
	call := fakeCall{id: "call_9", name: "get_weather", args: []string{`{"city":"Oslo"}`}}
	cases := []struct {
		name     string
		turn     turn
		stop     api.StopReason
		text     string
		wantCode string // OutputError code
	}{
		{name: "end_turn", turn: turn{text: []string{"hi"}, stop: api.StopEndTurn}, stop: api.StopEndTurn, text: "hi"},
		{name: "max_tokens", turn: turn{text: []string{"a long"}, stop: api.StopMaxTokens}, stop: api.StopMaxTokens, text: "a long"},
		{name: "refusal", turn: turn{text: []string{"I can't help with that."}, stop: api.StopRefusal}, stop: api.StopRefusal, text: "I can't help with that."},
		{name: "tool_use", turn: turn{calls: []fakeCall{call}, stop: api.StopToolUse}, stop: api.StopToolUse},
		{name: "tools-in-length-limited", turn: turn{calls: []fakeCall{{id: "call_9", name: "get_weather", args: []string{`{"city":"Os`}}}, stop: api.StopMaxTokens}, wantCode: api.CodeModelOutputIncomplete},
		{name: "invalid-tool-json", turn: turn{calls: []fakeCall{{id: "call_9", name: "get_weather", args: []string{`{"city":`, `Oslo}`}}}, stop: api.StopToolUse}, wantCode: api.CodeModelOutputInvalid},
		{name: "tool-input-not-object", turn: turn{calls: []fakeCall{{id: "call_9", name: "get_weather", args: []string{`["Oslo"]`}}}, stop: api.StopToolUse}, wantCode: api.CodeModelOutputInvalid},
	}
	for _, d := range dialects {
		for _, tc := range cases {
			t.Run(d.provider+"/"+tc.name, func(t *testing.T) {
				f, c := open(t, d, Limits{})
				f.set(sse(d.render(tc.turn)))
				res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}, Tools: []api.ToolDefinition{weatherTool}}, nil)
				if tc.wantCode != "" {
					var oe *OutputError
					if !errors.As(err, &oe) || oe.Code != tc.wantCode {
						t.Fatalf("err = %v, want OutputError %s", err, tc.wantCode)
					}
					var pe *ProviderError
					if errors.As(err, &pe) {
						t.Fatal("an output error is also a provider error")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.StopReason != tc.stop || res.Message.Text() != tc.text {
					t.Fatalf("stop %q text %q, want %q %q", res.StopReason, res.Message.Text(), tc.stop, tc.text)
				}
			})
		}
	}
}

// TestProviderErrors: status answers and error events become provider
// errors with the provider's code and retryable verdict, the API key never
// appears, and nothing is retried.
func TestProviderErrors(t *testing.T) {
	cases := []struct {
		status    int
		code      string
		retryable bool
	}{
		{http.StatusTooManyRequests, "rate_limit_exceeded", true},
		{http.StatusInternalServerError, "server_error", true},
		{529, "overloaded_error", true},
		{http.StatusBadRequest, "invalid_request_error", false},
		{http.StatusUnauthorized, "invalid_api_key", false},
		{http.StatusNotFound, "model_not_found", false},
	}
	for _, d := range dialects {
		for _, tc := range cases {
			t.Run(d.provider+"/"+tc.code, func(t *testing.T) {
				f, c := open(t, d, Limits{})
				// Providers echo (parts of) the key; the error must not.
				f.set(status(tc.status, d.errorBody(tc.code, "Incorrect API key provided: "+testKey+".")))
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v", err)
				}
				if pe.Code != tc.code || pe.Retryable != tc.retryable {
					t.Errorf("code %q retryable %v, want %q %v", pe.Code, pe.Retryable, tc.code, tc.retryable)
				}
				if strings.Contains(err.Error(), testKey) || strings.Contains(pe.Message, testKey) {
					t.Errorf("the API key leaked: %v", err)
				}
				if !strings.Contains(pe.Message, "Incorrect API key provided") {
					t.Errorf("message lost: %q", pe.Message)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests: a failed call was retried", n)
				}
			})
		}
		t.Run(d.provider+"/stream-error", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			code := map[string]string{ProviderAnthropic: "overloaded_error", ProviderOpenAI: "server_error", ProviderOpenAIChat: "server_error"}[d.provider]
			f.set(sse(d.streamError(code, "Overloaded "+testKey)))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != code || !pe.Retryable {
				t.Fatalf("err = %#v", err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the API key leaked: %v", err)
			}
		})
		t.Run(d.provider+"/truncated", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.set(sse(d.truncated()))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeStreamTruncated || !pe.Retryable {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/not-a-stream", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.set(status(http.StatusOK, `{"id":"x"}`))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeInvalidResponse {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/connection-refused", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.srv.Close()
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeConnectionFailed || !pe.Retryable {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestBounds: output, stream, event and error-body bounds, the call's time
// bound and the caller's cancellation.
func TestBounds(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, d := range dialects {
		msgs := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}
		t.Run(d.provider+"/output", func(t *testing.T) {
			f, c := open(t, d, Limits{MaxOutputBytes: 2000})
			f.set(sse(d.render(turn{text: []string{long}, stop: api.StopEndTurn})))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeResponseTooLarge || pe.Retryable {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/stream", func(t *testing.T) {
			f, c := open(t, d, Limits{MaxStreamBytes: 1500})
			f.set(sse(d.render(turn{text: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, stop: api.StopEndTurn})))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeResponseTooLarge || !strings.Contains(pe.Message, "response stream exceeds") {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/frame", func(t *testing.T) {
			f, c := open(t, d, Limits{MaxFrameBytes: 1024, MaxOutputBytes: 1000})
			f.set(sse(d.render(turn{text: []string{long}, stop: api.StopEndTurn})))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeResponseTooLarge || !strings.Contains(pe.Message, "stream event exceeds") {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/delta-split", func(t *testing.T) {
			f, c := open(t, d, Limits{MaxDeltaBytes: 1000})
			f.set(sse(d.render(turn{text: []string{long}, stop: api.StopEndTurn})))
			var deltas []string
			res, err := c.Call(context.Background(), msgs, func(d Delta) { deltas = append(deltas, d.Text) })
			if err != nil {
				t.Fatal(err)
			}
			if len(deltas) != 3 || strings.Join(deltas, "") != long || res.Message.Text() != long {
				t.Fatalf("%d deltas", len(deltas))
			}
		})
		t.Run(d.provider+"/error-body", func(t *testing.T) {
			f, c := open(t, d, Limits{MaxErrorBytes: 64})
			f.set(status(http.StatusBadRequest, d.errorBody("invalid_request_error", strings.Repeat("y", 10000))))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || len(pe.Message) > 200 {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/error-body-cut-inside-character", func(t *testing.T) {
			// A bound that ends inside a character leaves it out: the
			// message holds whole characters only.
			f, c := open(t, d, Limits{MaxErrorBytes: 63})
			f.set(status(http.StatusBadGateway, strings.Repeat("é", 100)))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || !strings.Contains(pe.Message, "éé") {
				t.Fatalf("err = %v", err)
			}
			if !utf8.ValidString(pe.Message) {
				t.Errorf("message %q is not valid UTF-8", pe.Message)
			}
		})
		t.Run(d.provider+"/timeout", func(t *testing.T) {
			f, c := open(t, d, Limits{Timeout: 200 * time.Millisecond})
			release := make(chan struct{})
			defer close(release)
			f.set(func(w http.ResponseWriter, r *recorded) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				<-release
			})
			start := time.Now()
			_, err := c.Call(context.Background(), msgs, nil)
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
				t.Fatalf("err = %v after %v", err, time.Since(start))
			}
			// The message the session records names the bound once.
			if got, want := err.Error(), "model: call exceeded its time bound: context deadline exceeded"; got != want {
				t.Errorf("err = %q, want %q", got, want)
			}
		})
		t.Run(d.provider+"/cancel", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			release := make(chan struct{})
			defer close(release)
			f.set(func(w http.ResponseWriter, r *recorded) { <-release })
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := c.Call(ctx, msgs, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run(d.provider+"/unknown-option", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			_, err := c.Call(context.Background(), Request{Messages: msgs.Messages, Options: json.RawMessage(`{"model":"other"}`)}, nil)
			if !errors.Is(err, ErrInvalidRequest) || len(f.requests()) != 0 {
				t.Fatalf("err = %v, %d requests", err, len(f.requests()))
			}
		})
	}
}

func TestNewRejectsBadBaseURLs(t *testing.T) {
	for _, u := range []string{"ftp://x", "http://user:pw@host/v1", "not a url", "http://host/v1?x=1"} {
		if _, err := New(Config{OpenAIBaseURL: u}); err == nil {
			t.Errorf("OpenAIBaseURL %q accepted", u)
		}
		if _, err := New(Config{AnthropicBaseURL: u}); err == nil {
			t.Errorf("AnthropicBaseURL %q accepted", u)
		}
	}
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ProviderScripted, ProviderOpenAI, ProviderOpenAIChat, ProviderAnthropic} {
		if _, err := p.Open(Spec{Provider: name, Name: "m"}); err != nil {
			t.Errorf("open %s: %v", name, err)
		}
	}
	if _, err := p.Open(Spec{Provider: ProviderOpenAI, Name: "has space"}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("err = %v", err)
	}
}

// TestConcurrentCalls: one client serves concurrent calls.
func TestConcurrentCalls(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.set(sse(d.render(turn{text: []string{"o", "k"}, stop: api.StopEndTurn})))
			errs := make(chan error, 8)
			for range 8 {
				go func() {
					res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, func(Delta) {})
					if err == nil && res.Message.Text() != "ok" {
						err = errors.New("text " + res.Message.Text())
					}
					errs <- err
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}
