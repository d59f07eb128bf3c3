package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An environment call whose output does not match the method's
// output_schema because of a member the provider named at length (a
// key of hundreds of kilobytes) is answered invalid_output with a message
// of at most 4096 bytes, cut between characters and marked as cut, not
// one that quotes the whole key.
func TestEnvironmentCallInvalidOutputMessageBounded(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "callecho"})
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1",
		Methods: map[string]api.EnvironmentMethod{"work": {
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		}}}}})
	long := strings.Repeat("ключ", 50000) // 400 KB of 2-byte characters
	input, err := json.Marshal(map[string]int{long: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.engine.CallEnvironment(context.Background(), id, "box", "work", input)
	var ee *EnvironmentError
	if !errors.As(err, &ee) || ee.Code != envapi.CodeInvalidOutput {
		t.Fatalf("call whose output has a member the schema does not allow = %v, want an %s environment error", err, envapi.CodeInvalidOutput)
	}
	msg := APIError(err).Message
	if len(msg) > maxFailureMessage || !utf8.ValidString(msg) || !strings.Contains(msg, "cut") || !strings.Contains(msg, long[:1000]) {
		t.Errorf("the answer's message holds %d bytes (valid UTF-8: %v), ending %q; want the head of it, cut between characters and marked, at most %d bytes",
			len(msg), utf8.ValidString(msg), msg[max(0, len(msg)-40):], maxFailureMessage)
	}
}
