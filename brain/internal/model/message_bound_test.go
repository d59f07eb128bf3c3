package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// TestLongProviderMessageIsBoundedWhereDecoded: a provider whose error
// (an error event inside the stream, a failed response, an error answer)
// carries a message of hundreds of kilobytes, with the API key echoed in
// it before and after the bound, fails the call with an error that keeps
// at most MaxMessageBytes of it, cut between characters, the key removed:
// the message is not held whole until the engine cuts it. The error's
// text is the one the engine records, as it was with the whole message:
// what CutMessage makes of the whole text, the whole length counted with
// every echo of the key replaced.
func TestLongProviderMessageIsBoundedWhereDecoded(t *testing.T) {
	long := "echoed " + testKey + ": " + strings.Repeat("сбой модели ", 20000) + "and again " + testKey
	clear := strings.ReplaceAll(long, testKey, redacted)
	type answer struct {
		name  string
		d     dialect
		reply func(http.ResponseWriter, *recorded)
		code  string
		msg   string // the message, whole, as the error holds it
	}
	var cases []answer
	for _, d := range dialects {
		cases = append(cases,
			answer{d.provider + "/stream", d, sse(d.streamError("server_error", long)), "server_error", clear},
			answer{d.provider + "/status", d, status(http.StatusBadRequest, d.errorBody("invalid_request_error", long)), "invalid_request_error",
				"status 400: " + clear})
	}
	cases = append(cases, answer{"openai/failed", responsesDialect, sse(
		event("response.created", map[string]any{"type": "response.created", "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
			event("response.failed", map[string]any{"type": "response.failed", "response": map[string]any{
				"status": "failed", "output": []any{}, "error": map[string]any{"code": "server_error", "message": long}}})),
		"server_error", clear})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := open(t, tc.d, Limits{MaxFrameBytes: 1 << 20, MaxErrorBytes: 1 << 20})
			f.set(tc.reply)
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Fatalf("err = %.200v, want a provider error %s", err, tc.code)
			}
			text := "model: provider failed: " + tc.code + ": " + tc.msg
			want := CutMessage(text, len(text))
			if got := err.Error(); got != want {
				t.Errorf("error text\n%.120q ... %q\nwant\n%.120q ... %q", got, got[max(0, len(got)-60):], want, want[len(want)-60:])
			}
			if recorded := CutMessage(err.Error(), len(err.Error())); recorded != want {
				t.Errorf("the message recorded changed: %q", recorded[max(0, len(recorded)-60):])
			}
			msg := pe.Message
			if len(msg) > MaxMessageBytes || !utf8.ValidString(msg) || strings.Contains(msg, testKey) {
				t.Fatalf("message of %d bytes (valid UTF-8 %v, key in it %v), want at most %d, cut between characters, without the key",
					len(msg), utf8.ValidString(msg), strings.Contains(msg, testKey), MaxMessageBytes)
			}
			if !strings.HasPrefix(msg, tc.msg[:1000]) || !strings.HasSuffix(msg, " bytes in all]") {
				t.Errorf("message %.80q ... %q does not keep the head of the provider's and say it was cut", msg, msg[max(0, len(msg)-40):])
			}
		})
	}
}

// TestLongProviderCodeIsShortened: a provider's error code (which the
// engine records as the failure's provider_code, besides its message)
// that is as long as the event bound allows, the API key echoed at its
// start, is kept shortened as a quoted name is (see shown), without the
// key; the retryable verdict is the code's.
func TestLongProviderCodeIsShortened(t *testing.T) {
	code := testKey + strings.Repeat("код", 50000)
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := open(t, d, Limits{MaxFrameBytes: 1 << 20, MaxErrorBytes: 1 << 20})
			for _, reply := range []func(http.ResponseWriter, *recorded){sse(d.streamError(code, "failed")), status(http.StatusBadRequest, d.errorBody(code, "failed"))} {
				f.set(reply)
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %.200v, want a provider error", err)
				}
				clear := strings.Replace(code, testKey, redacted, 1)
				if len(pe.Code) > maxShown+len("...") || !utf8.ValidString(pe.Code) || !strings.HasPrefix(clear, strings.TrimSuffix(pe.Code, "...")) || len(pe.Code) < maxShown-4 {
					t.Errorf("code of %d bytes %.80q, want the head of the provider's, at most %d bytes, without the key", len(pe.Code), pe.Code, maxShown+3)
				}
				if len(err.Error()) > MaxMessageBytes {
					t.Errorf("error text of %d bytes", len(err.Error()))
				}
			}
		})
	}
}
