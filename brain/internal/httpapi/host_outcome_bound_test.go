package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
)

// TestHostOutcomesTakeTheEnvironmentAnswerBound: a host posts its tool
// call's outcome to /results (or as a result, returned or finish service
// call to /call). An outcome larger than the environment answer bound
// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES), which Brain would not take from
// an environment's execute, is refused 413 invalid_request naming the
// bound, as a Tool's outcome callback is: nothing is recorded, also under
// an Idempotency-Key, and the call still finishes with a smaller outcome.
// An event carries no outcome and is not bounded so.
func TestHostOutcomesTakeTheEnvironmentAnswerBound(t *testing.T) {
	const bound = 4096
	binder, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1", MaxResponseBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { binder.Close() })
	f := newHostFixtureWith(t, Options{Bindings: binder}, nil)
	cmd := f.invoke()
	auth := []string{"Authorization", "Bearer " + f.token}
	big := strings.Repeat("x", 2*bound)
	bigOutcome := json.RawMessage(`{"status":"ok","value":"` + big + `"}`)

	refused := func(what string, st int, b []byte) {
		t.Helper()
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != http.StatusRequestEntityTooLarge || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, "4096") {
			t.Fatalf("%s of an outcome past the environment answer bound = %d %s, want 413 invalid_request naming the bound", what, st, b)
		}
	}
	for _, typ := range []string{api.UpdateResult, api.UpdateReturned, api.UpdateFinish} {
		body := `{"session_id":"` + cmd.SessionID + `","sequence":` + jsonNumber(cmd.Sequence) + `,"update":{"type":"` + typ + `","outcome":` + string(bigOutcome) + `}}`
		st, _, b := f.do("POST", "/v1/hosts/"+f.hostID+"/results", body, auth...)
		refused("/results "+typ, st, b)
		st, _, b = f.do("POST", "/v1/hosts/"+f.hostID+"/results", body, append(auth, "Idempotency-Key", "k-"+typ)...)
		refused("/results "+typ+" under a key", st, b)
	}
	for _, m := range []string{"result", "returned", "finish"} {
		st, b := f.call(cmd, m, string(bigOutcome), "")
		refused("/call "+m, st, b)
	}
	// An event carries no outcome: the request bound alone applies.
	ev, _ := json.Marshal(api.HostEvent{SessionID: cmd.SessionID, Sequence: cmd.Sequence, EventType: "host.note", Data: json.RawMessage(`"` + big + `"`)})
	if st, _, b := f.do("POST", "/v1/hosts/"+f.hostID+"/events", string(ev), auth...); st != http.StatusOK {
		t.Fatalf("an event of %d bytes = %d %s, want 200", len(big), st, b)
	}
	// Nothing was recorded of the refused outcomes; the call is still open
	// and finishes with a smaller one, under a key a refusal used.
	small := `{"session_id":"` + cmd.SessionID + `","sequence":` + jsonNumber(cmd.Sequence) + `,"update":{"type":"finish","outcome":{"status":"error","error":{"code":"output_limit","message":"too large"}}}}`
	if st, _, b := f.do("POST", "/v1/hosts/"+f.hostID+"/results", small, append(auth, "Idempotency-Key", "k-finish")...); st != http.StatusOK {
		t.Fatalf("finish with a small outcome after the refusals = %d %s, want 200", st, b)
	}
	st, _, b := f.do("GET", "/v1/sessions/"+cmd.SessionID+"/events?after=0", "")
	var page api.EventPage
	if st != 200 || json.Unmarshal(b, &page) != nil {
		t.Fatalf("events = %d %s", st, b)
	}
	ended := 0
	for _, ev := range page.Events {
		if ev.EventType == api.KindToolResultEmitted || ev.EventType == api.KindToolCallReturned ||
			ev.EventType != "host.note" && bytes.Contains(ev.Data, []byte(big[:bound])) {
			t.Errorf("a refused outcome was recorded: %s %.200s", ev.EventType, ev.Data)
		}
		if ev.EventType == api.KindToolCallEnded {
			ended++
			if !bytes.Contains(ev.Data, []byte(`"output_limit"`)) {
				t.Errorf("tool_call_ended %s, want the outcome finished after the refusals", ev.Data)
			}
		}
	}
	if ended != 1 {
		t.Errorf("%d tool_call_ended records, want 1", ended)
	}
}

func jsonNumber(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
