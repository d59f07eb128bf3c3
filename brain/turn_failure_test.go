package brain_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
)

// A synchronous send whose turn ran and failed answers the turn's
// failure (500 agentloop_failed), and that answer is its key's: the same
// request again is answered the same without running the turn again (here
// the default loop runs out of its one step: the model's call of a tool
// the session does not have is answered, and the loop would have to ask
// the model again).
func TestFailedTurnAnswerIsTheKeys(t *testing.T) {
	b := braintest.Start(t, braintest.Options{Token: "tok"})
	do := func(method, path, body, key string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, b.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	code, body := do("POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_builtin","name":"default"},"configuration":{"max_steps":1}}}`, "create")
	if code != http.StatusOK {
		t.Fatalf("create = %d %s", code, body)
	}
	var sum api.SessionSummary
	if err := json.Unmarshal(body, &sum); err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + sum.SessionID + "/messages"
	msg := `{"input":{"message":"{\"tool_calls\":[{\"name\":\"absent\"}]}"}}`
	code1, body1 := do("POST", path, msg, "send")
	var e api.ApiError
	if err := json.Unmarshal(body1, &e); err != nil || code1 != http.StatusInternalServerError || e.Code != api.FailureAgentloopFailed {
		t.Fatalf("send = %d %s, want 500 agentloop_failed", code1, body1)
	}
	code2, body2 := do("POST", path, msg, "send")
	if code2 != code1 || string(body2) != string(body1) {
		t.Fatalf("the same send again = %d %s, want %d %s", code2, body2, code1, body1)
	}
	code, body = do("GET", "/v1/sessions/"+sum.SessionID+"/events?after=0", "", "")
	var page api.EventPage
	if err := json.Unmarshal(body, &page); err != nil || code != http.StatusOK {
		t.Fatalf("events = %d %s", code, body)
	}
	turns, calls := 0, 0
	for _, ev := range page.Events {
		switch ev.EventType {
		case api.KindTurnStarted:
			turns++
		case api.KindModelCallStarted:
			calls++
		}
	}
	if turns != 1 || calls != 1 {
		t.Fatalf("%d turn_started and %d model_call_started, want the one turn's", turns, calls)
	}
}
