package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestStreamCutMidEvent: a connection that drops in the middle of an event
// (its data line cut short, no blank line after it) is a truncated stream,
// retryable like one cut between events, not an answer that does not
// follow the dialect.
func TestStreamCutMidEvent(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			whole := d.render(turn{text: []string{"Hello", " world"}, stop: api.StopEndTurn, in: 10, out: 2})
			// Cut inside the data of the event carrying the second delta.
			cut := whole[:strings.Index(whole, `" world"`)]
			f, c := open(t, d, Limits{})
			f.set(sse(cut))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeStreamTruncated || !pe.Retryable {
				t.Fatalf("err = %v, want a retryable %s", err, CodeStreamTruncated)
			}
		})
	}
}

// TestStreamDroppedMidEvent: a connection that breaks in the middle of a
// stream (no clean end of the body: a reset, a proxy giving up) is a
// truncated stream, as a stream that ends early is, not a connection
// that never answered; what the provider had reported is kept.
func TestStreamDroppedMidEvent(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			whole := d.render(turn{text: []string{"Hello", " world"}, stop: api.StopEndTurn, in: 10, out: 2})
			cut := whole[:strings.Index(whole, `" world"`)]
			f, c := open(t, d, Limits{})
			f.set(func(w http.ResponseWriter, _ *recorded) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, cut)
				w.(http.Flusher).Flush()
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				_ = conn.Close() // the chunked body never ends
			})
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeStreamTruncated || !pe.Retryable {
				t.Fatalf("err = %v, want a retryable %s", err, CodeStreamTruncated)
			}
			var partial *PartialError
			if !errors.As(err, &partial) {
				t.Fatalf("err = %v, want what the provider had reported kept", err)
			}
		})
	}
}

// TestCompactionDroppedMidAnswer: a compaction answer whose connection
// breaks inside its JSON body is a truncated answer, not a connection that
// never answered.
func TestCompactionDroppedMidAnswer(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	f.set(func(w http.ResponseWriter, _ *recorded) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"resp_1","object":"response.compaction","output":[{"type":"compaction","encrypted_content":"gAAA`)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.Close()
	})
	req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}, Options: []byte(`{"operation":"compact"}`)}
	_, err := c.Call(context.Background(), req, nil)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != CodeStreamTruncated || !pe.Retryable {
		t.Fatalf("err = %v, want a retryable %s", err, CodeStreamTruncated)
	}
}
