package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestIdempotencyKeyGivenTwice checks that a request carrying two
// Idempotency-Key headers is refused with 400 invalid_request instead of
// running under one of them.
func TestIdempotencyKeyGivenTwice(t *testing.T) {
	f := newFixture(t, Options{Bindings: newBinder(t)})
	created := f.create("c")
	sp := "/v1/sessions/" + created.SessionID
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"}}`},
		{"POST", sp + "/messages", `{"input":{"message":"hi"}}`},
		{"POST", sp + "/environments", `{"operation":"list"}`},
		{"POST", sp + "/environments/box/calls/inspect", `{"input":{}}`},
		{"POST", sp + "/cancel", ""},
		{"POST", sp + "/end", ""},
		{"DELETE", sp, ""},
	} {
		var rd io.Reader
		if c.body != "" {
			rd = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, f.url+c.path, rd)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Add("Idempotency-Key", "first")
		req.Header.Add("Idempotency-Key", "second")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e api.ApiError
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Code != api.CodeInvalidRequest ||
			!strings.Contains(e.Message, "idempotency-key") {
			t.Errorf("%s %s with two keys = %d %s, want 400 invalid_request", c.method, c.path, resp.StatusCode, b)
		}
	}
	// Nothing ran: the session is still open, with no turn.
	st, _, b := f.do("GET", sp, "")
	var sum api.SessionSummary
	if st != 200 || json.Unmarshal(b, &sum) != nil || sum.Status != created.Status || sum.LastSequence != created.LastSequence {
		t.Errorf("session after the refused requests: %d %s", st, b)
	}
	if st, _, b := f.do("GET", "/v1/sessions", ""); st != 200 || strings.Count(string(b), "ses_") != 1 {
		t.Errorf("sessions after the refused create: %d %s", st, b)
	}
}
