package model

import (
	"context"
	"errors"
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
