package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestToolOutcomeCallsTakeTheEnvironmentAnswerBound: a Tool that returned
// and finishes later posts its outcome to the finish callback. An outcome
// larger than the environment answer bound (MaxResponseBytes), which Brain
// would not take as the execute's own answer, is refused 413 as the
// callback's body is when it exceeds the request bound: nothing is
// recorded, and the Tool may still finish with a smaller outcome. result
// and returned are bounded alike; other methods are not.
func TestToolOutcomeCallsTakeTheEnvironmentAnswerBound(t *testing.T) {
	const bound = 4096
	// The environment answers the execute returned (the Tool goes on in
	// the background) and hands its callback grant to the test.
	f, id, g := returnedTool(t, bound)
	u, _ := url.Parse(g.URL)
	call := func(method string, input any) (int, api.ApiError, []byte) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"method": method, "input": input})
		st, _, b := f.do("POST", u.Path, string(body), "Authorization", "Bearer "+g.Token)
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		return st, e, b
	}
	big := strings.Repeat("x", 2*bound)
	for _, m := range []string{envapi.MethodResult, envapi.MethodReturned, envapi.MethodFinish} {
		st, e, b := call(m, map[string]any{"status": "ok", "value": big})
		if st != http.StatusRequestEntityTooLarge || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, "4096") {
			t.Fatalf("%s of an outcome past the environment answer bound = %d %s, want 413 naming the bound", m, st, b)
		}
	}
	// A method that carries no outcome is not bounded so.
	if st, _, b := call(envapi.MethodEmit, map[string]any{"event_type": "box.note", "data": big}); st != http.StatusOK {
		t.Fatalf("emit of %d bytes = %d %s, want 200", len(big), st, b)
	}
	// The refused finish was no attempt: the Tool is still open and
	// finishes with a smaller outcome.
	st, _, b := call(envapi.MethodFinish, map[string]any{"status": "error", "error": map[string]any{"code": "output_limit", "message": "too large"}})
	if st != http.StatusOK {
		t.Fatalf("finish with a small outcome after the refusal = %d %s, want 200", st, b)
	}
	st, _, b = f.do("GET", "/v1/sessions/"+id+"/events?after=0", "")
	if st != 200 {
		t.Fatalf("events = %d %s", st, b)
	}
	var page api.EventPage
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, ev := range page.Events {
		if ev.EventType == api.KindToolResultEmitted || bytes.Contains(ev.Data, []byte(big[:bound])) && ev.EventType != "box.note" {
			t.Errorf("a refused outcome was recorded: %s %s", ev.EventType, ev.Data)
		}
		if ev.EventType == api.KindToolCallEnded {
			ended++
			if !bytes.Contains(ev.Data, []byte(`"output_limit"`)) {
				t.Errorf("tool_call_ended %s, want the outcome finished after the refusal", ev.Data)
			}
		}
	}
	if ended != 1 {
		t.Errorf("%d tool_call_ended records, want 1", ended)
	}
}
