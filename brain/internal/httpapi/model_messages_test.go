package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// modelCalls answers how many model calls the session recorded.
func (f *fixture) modelCalls(sessionID string) int {
	f.t.Helper()
	st, _, b := f.do("GET", "/v1/sessions/"+sessionID+"/events?after=0", "")
	var page api.EventPage
	if st != 200 || json.Unmarshal(b, &page) != nil {
		f.t.Fatalf("events = %d %s", st, b)
	}
	n := 0
	for _, ev := range page.Events {
		if ev.EventType == api.KindModelCallStarted {
			n++
		}
	}
	return n
}

// refusedMessages fails t unless st and b are a 422 invalid_request
// naming the messages field.
func refusedMessages(t *testing.T, what string, st int, b []byte) {
	t.Helper()
	var e api.ApiError
	_ = json.Unmarshal(b, &e)
	if st != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, "messages") {
		t.Fatalf("%s = %d %s, want 422 invalid_request naming messages", what, st, b)
	}
}

// TestHostModelCallWithoutMessagesIsRefused: a host's model call whose
// request has no messages (an empty request, messages null, no request
// at all) breaks the ModelRequest schema, which requires them: it is
// refused 422 invalid_request naming the field, and neither recorded nor
// sent to the model; the call's next model call with messages runs.
func TestHostModelCallWithoutMessagesIsRefused(t *testing.T) {
	f := newHostFixture(t)
	cmd := f.invoke()
	auth := []string{"Authorization", "Bearer " + f.token}
	before := f.modelCalls(cmd.SessionID)
	head := `{"session_id":"` + cmd.SessionID + `","sequence":` + jsonNumber(cmd.Sequence)
	for _, body := range []string{head + `,"request":{}}`, head + `,"request":{"messages":null}}`, head + `,"request":{"system":"s"}}`, head + `}`} {
		st, _, b := f.do("POST", "/v1/hosts/"+f.hostID+"/model", body, auth...)
		refusedMessages(t, "/model "+body, st, b)
	}
	if n := f.modelCalls(cmd.SessionID); n != before {
		t.Fatalf("%d model calls recorded after the refused ones, want %d", n, before)
	}
	ok := head + `,"request":{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}}`
	if st, _, b := f.do("POST", "/v1/hosts/"+f.hostID+"/model", ok, auth...); st != http.StatusOK {
		t.Fatalf("/model with messages after the refusals = %d %s, want 200", st, b)
	}
	if n := f.modelCalls(cmd.SessionID); n != before+1 {
		t.Fatalf("%d model calls recorded, want %d", n, before+1)
	}
}

// TestToolModelCallWithoutMessagesIsRefused: a Tool's model call through
// its callback (or a host's through /call) whose input has no messages is
// refused 422 invalid_request naming the field, and nothing is recorded.
func TestToolModelCallWithoutMessagesIsRefused(t *testing.T) {
	f, id, g := returnedTool(t, 0)
	u, _ := url.Parse(g.URL)
	before := f.modelCalls(id)
	for _, input := range []string{`{}`, `{"messages":null}`} {
		st, _, b := f.do("POST", u.Path, `{"method":"model","input":`+input+`}`, "Authorization", "Bearer "+g.Token)
		refusedMessages(t, "model "+input, st, b)
	}
	if n := f.modelCalls(id); n != before {
		t.Fatalf("%d model calls recorded after the refused ones, want %d", n, before)
	}

	h := newHostFixture(t)
	cmd := h.invoke()
	before = h.modelCalls(cmd.SessionID)
	st, b := h.call(cmd, "model", `{}`, "")
	refusedMessages(t, "/call model {}", st, b)
	if n := h.modelCalls(cmd.SessionID); n != before {
		t.Fatalf("%d model calls recorded after the refused /call, want %d", n, before)
	}
}
