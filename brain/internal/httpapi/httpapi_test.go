package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestMalformedInput checks that every route refuses malformed input with
// the documented status and an ApiError body.
func TestMalformedInput(t *testing.T) {
	f := newFixture(t, Options{MaxRequestBytes: 1 << 10})
	sid := f.create("setup").SessionID
	sp := "/v1/sessions/" + sid
	long := strings.Repeat("k", 257)
	create := `{"model":{"provider":"scripted","name":"m"}}`
	msg := `{"input":{"message":"hi"}}`
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
	}{
		{"create/no-key", "POST", "/v1/sessions", create, nil, 400, "invalid_request"},
		{"create/long-key", "POST", "/v1/sessions", create, []string{"Idempotency-Key", long}, 400, "invalid_request"},
		{"create/bad-json", "POST", "/v1/sessions", `{`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"create/trailing", "POST", "/v1/sessions", create + `{}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"create/unknown-field", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"x":1}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/nested-unknown", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m","x":1}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/wrong-type", "POST", "/v1/sessions", `{"model":"m"}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/no-model", "POST", "/v1/sessions", `{}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/name-space", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"a b"}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/bad-env", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"e","driver":"ftp"}]}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/bad-driver-name", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"e","driver":"no such/driver"}]}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/uploaded-loop", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_component","entrypoint":"turn","id":"` + strings.Repeat("a", 64) + `"}}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/text-plain", "POST", "/v1/sessions", create, []string{"Idempotency-Key", "a", "Content-Type", "text/plain"}, 415, "invalid_request"},
		{"create/too-large", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"` + strings.Repeat("m", 2<<10) + `"}}`, []string{"Idempotency-Key", "a"}, 413, "invalid_request"},
		{"get/bad-id", "GET", "/v1/sessions/bad", "", nil, 400, "invalid_request"},
		{"get/unknown", "GET", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAA", "", nil, 404, "not_found"},
		{"delete/no-key", "DELETE", sp, "", nil, 400, "invalid_request"},
		{"delete/bad-id", "DELETE", "/v1/sessions/x", "", []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"delete/idle", "DELETE", sp, "", []string{"Idempotency-Key", "del"}, 409, "conflict"},
		{"message/no-key", "POST", sp + "/messages", msg, nil, 400, "invalid_request"},
		{"message/prefer", "POST", sp + "/messages", msg, []string{"Idempotency-Key", "a", "Prefer", "return=minimal"}, 400, "invalid_request"},
		{"message/empty", "POST", sp + "/messages", `{"input":{"message":""}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"message/string-input", "POST", sp + "/messages", `{"input":"hi"}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"message/bad-media", "POST", sp + "/messages", `{"input":{"message":"m","media":[{"type":"image","url":"http://x/y"}]}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"message/media-no-host", "POST", sp + "/messages", `{"input":{"message":"m","media":[{"type":"image","url":"https://:443/y"}]}}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"create/url-no-host", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"e","driver":"http","url":"http://:8080"}]}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"message/bad-json", "POST", sp + "/messages", `[`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"message/no-content-type", "POST", sp + "/messages", msg, []string{"Idempotency-Key", "a", "Content-Type", ""}, 415, "invalid_request"},
		{"message/unknown", "POST", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAA/messages", msg, []string{"Idempotency-Key", "u"}, 404, "not_found"},
		{"transcript/bad-id", "GET", "/v1/sessions/ses_/transcript", "", nil, 400, "invalid_request"},
		{"events/bad-after", "GET", sp + "/events?after=-1", "", nil, 400, "invalid_request"},
		{"events/malformed-query", "GET", sp + "/events?after=%zz", "", nil, 400, "invalid_request"},
		{"events/repeated-after", "GET", sp + "/events?after=1&after=2", "", nil, 400, "invalid_request"},
		{"create/duplicate-key", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"model":{"provider":"scripted","name":"n"}}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"create/nested-duplicate-key", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m","name":"n"}}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"create/empty-credential", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"e","driver":"http","url":"http://127.0.0.1:1","credential":""}]}`, []string{"Idempotency-Key", "a"}, 422, "invalid_request"},
		{"message/duplicate-key", "POST", sp + "/messages", `{"input":{"message":"a","message":"b"}}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"events/bad-last-event-id", "GET", sp + "/events", "", []string{"Last-Event-ID", "x"}, 400, "invalid_request"},
		{"events/unknown", "GET", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAA/events", "", nil, 404, "not_found"},
		{"cancel/no-key", "POST", sp + "/cancel", "", nil, 400, "invalid_request"},
		{"cancel/bad-id", "POST", "/v1/sessions/nope/cancel", "", []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"end/no-key", "POST", sp + "/end", "", nil, 400, "invalid_request"},
		{"end/unknown", "POST", "/v1/sessions/ses_AAAAAAAAAAAAAAAAAAAA/end", "", []string{"Idempotency-Key", "e"}, 404, "not_found"},
		{"auth/wrong-token", "GET", "/v1/sessions", "", []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"auth/no-token", "GET", "/v1/sessions", "", []string{"Authorization", ""}, 401, "unauthorized"},
		{"route/unknown", "GET", "/v1/nothing", "", nil, 404, "not_found"},
		// JSON between systems is UTF-8: a byte that is not is refused,
		// not replaced (in strings) nor kept (in raw values, to be
		// journalled as JSON no client reads).
		{"create/not-utf8", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"system":"a` + "\xff" + `b"}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"create/not-utf8-raw", "POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_builtin","name":"default"},"configuration":{"x":"` + "\xc3" + `"}}}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
		{"message/not-utf8", "POST", sp + "/messages", `{"input":{"message":"` + "\xed\xa0\x80" + `"}}`, []string{"Idempotency-Key", "a"}, 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, h, b := f.do(c.method, c.path, c.body, c.headers...)
			if st != c.status {
				t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, st, b, c.status)
			}
			var e api.ApiError
			if err := json.Unmarshal(b, &e); err != nil || e.Code != c.code || e.Message == "" {
				t.Fatalf("body %s is not an ApiError with code %q", b, c.code)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
	// Refused requests did not consume their keys: "a" still creates.
	if st, _, b := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "a"); st != 200 {
		t.Fatalf("create with a key only used by refused requests = %d %s", st, b)
	}
}

func TestIdempotentReplayAndScopes(t *testing.T) {
	f := newFixture(t, Options{})
	create := `{"model":{"provider":"scripted","name":"m"}}`
	st1, _, b1 := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "k")
	st2, _, b2 := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "k")
	if st1 != 200 || st2 != 200 || string(b1) != string(b2) {
		t.Fatalf("replay: %d %s then %d %s", st1, b1, st2, b2)
	}
	if st, _, b := f.do("POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"other"}}`, "Idempotency-Key", "k"); st != 409 {
		t.Fatalf("different body = %d %s, want 409", st, b)
	}
	var sum api.SessionSummary
	json.Unmarshal(b1, &sum)
	path := "/v1/sessions/" + sum.SessionID + "/messages"
	msg := `{"input":{"message":"hi"}}`
	st, h, b := f.do("POST", path, msg, "Idempotency-Key", "m", "Prefer", "respond-async")
	if st != 202 || h.Get("Preference-Applied") != "respond-async" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("async = %d %v %s", st, h, b)
	}
	var seq uint64
	if err := json.Unmarshal(b, &seq); err != nil || seq == 0 {
		t.Fatalf("async body %q is not a sequence", b)
	}
	st, h, b2 = f.do("POST", path, msg, "Idempotency-Key", "m", "Prefer", "respond-async")
	if st != 202 || string(b2) != string(b) || h.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("async replay = %d %s, want 202 %s", st, b2, b)
	}
	// The same key as a synchronous send is another operation.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _, b = f.do("POST", path, msg, "Idempotency-Key", "m")
		if st == 200 || time.Now().After(deadline) {
			break
		}
		// The async turn may still hold the session: a busy refusal does
		// not consume the key, so retrying with it is allowed.
		if st != 409 || !strings.Contains(string(b), "admission") {
			t.Fatalf("sync send with the async key = %d %s", st, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st != 200 {
		t.Fatalf("sync send = %d %s", st, b)
	}
}

func TestDrainRefusesNewWork(t *testing.T) {
	f := newFixture(t, Options{})
	sid := f.create("c").SessionID
	f.srv.Drain()
	if st, _, _ := f.do("GET", "/health/ready", "", "Authorization", ""); st != 503 {
		t.Fatalf("ready while draining = %d", st)
	}
	if st, _, _ := f.do("GET", "/health/live", "", "Authorization", ""); st != 204 {
		t.Fatalf("live while draining = %d", st)
	}
	st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"x"}}`, "Idempotency-Key", "d")
	if st != 503 || !strings.Contains(string(b), `"overloaded"`) {
		t.Fatalf("send while draining = %d %s", st, b)
	}
	if err := f.srv.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := f.do("GET", "/v1/sessions/"+sid, ""); st != 200 {
		t.Fatalf("reads while draining = %d", st)
	}
}

func TestStreamFramesAndEnd(t *testing.T) {
	f := newFixture(t, Options{Heartbeat: 20 * time.Millisecond})
	sid := f.create("c").SessionID
	req, _ := http.NewRequest("GET", f.url+"/v1/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/messages", `{"input":{"message":"{\"reply\":\"x\",\"stream\":true}"}}`, "Idempotency-Key", "m"); st != 200 {
		t.Fatalf("send = %d %s", st, b)
	}
	if st, _, b := f.do("POST", "/v1/sessions/"+sid+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	var types []string
	var last uint64 = 1
	readFrames(resp.Body, func(fr sseFrame) bool {
		if !fr.hasID {
			if fr.event != api.LiveModelOutput && fr.event != api.LiveModelRequest && fr.event != api.LiveModelUsage {
				t.Errorf("frame without id has event %q", fr.event)
			}
			return true
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(fr.data), &ev); err != nil {
			t.Fatalf("data %q: %v", fr.data, err)
		}
		if fr.id != jsonNum(ev.Sequence) || fr.event != ev.EventType || ev.Sequence <= last {
			t.Errorf("frame id %s event %s carries %+v after %d", fr.id, fr.event, ev, last)
		}
		last = ev.Sequence
		types = append(types, ev.EventType)
		return true
	})
	if len(types) == 0 || types[0] != api.KindSessionCreationEnded || types[len(types)-1] != api.KindSessionEnded {
		t.Fatalf("stream types %v: want from session_creation_ended (Last-Event-ID 1) to session_ended", types)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }
