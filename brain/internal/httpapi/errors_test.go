package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// TestErrorMessagesReadCleanly checks that the messages of refusals the
// engine makes name what was refused without the prefixes of the code
// that refused it, and keep what they say.
func TestErrorMessagesReadCleanly(t *testing.T) {
	f := newFixture(t, Options{Bindings: newBinder(t)})
	id := f.create("c").SessionID
	sp := "/v1/sessions/" + id
	const unknown = "ses_AAAAAAAAAAAAAAAAAAAAAAAA"
	if st, _, b := f.do("POST", sp+"/end", "", "Idempotency-Key", "e"); st != 200 {
		t.Fatalf("end = %d %s", st, b)
	}
	for i, c := range []struct {
		method, path, body string
		status             int
		says               []string
	}{
		{"GET", "/v1/sessions/" + unknown, "", 404, []string{unknown, "not found"}},
		{"POST", "/v1/sessions/" + unknown + "/environments", `{"operation":"list"}`, 404, []string{unknown, "not found"}},
		{"POST", sp + "/messages", `{"input":{"message":"hi"}}`, 409, []string{"not allowed in this state", id + " is ended"}},
		{"POST", sp + "/environments", `{"operation":"get","environment":{"name":"x","sequence":3}}`, 404, []string{"environment x/3", "not found"}},
		{"POST", sp + "/environments/box/calls/inspect", `{"input":{}}`, 404, []string{"environment box", "not found"}},
		{"POST", sp + "/environments", `{"operation":"get"}`, 422, []string{"environment", "is required"}},
		{"POST", "/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"surprise":1}`, 422, []string{`unknown field "surprise"`}},
	} {
		st, _, b := f.do(c.method, c.path, c.body, "Idempotency-Key", "k"+string(rune('a'+i)))
		var e api.ApiError
		if st != c.status || json.Unmarshal(b, &e) != nil {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, st, b, c.status)
			continue
		}
		for _, leak := range []string{"session: ", "envapi: ", "json: "} {
			if strings.Contains(e.Message, leak) {
				t.Errorf("%s %s: message %q holds %q", c.method, c.path, e.Message, leak)
			}
		}
		for _, s := range c.says {
			if !strings.Contains(e.Message, s) {
				t.Errorf("%s %s: message %q does not say %q", c.method, c.path, e.Message, s)
			}
		}
	}
}

// TestCleanMessageKeepsQuotedText checks that what a message quotes (the
// client's names and values) is kept as it is.
func TestCleanMessageKeepsQuotedText(t *testing.T) {
	for in, want := range map[string]string{
		`session ses_x: session: not found`:                         `session ses_x: not found`,
		`session: invalid request: unknown tool "json: session: x"`: `invalid request: unknown tool "json: session: x"`,
		`envapi: input: key "a\": envapi: b" twice: session: end`:   `input: key "a\": envapi: b" twice: end`,
		`the sessions: list`:                                        `the sessions: list`,
	} {
		if got := cleanMessage(in); got != want {
			t.Errorf("cleanMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLongMessageCutBetweenCharacters: a message past the ApiError bound
// is cut to it between characters, so that the answer never ends in half
// of a character (which JSON would turn into U+FFFD).
func TestLongMessageCutBetweenCharacters(t *testing.T) {
	for _, width := range []int{2, 3, 4} {
		ch := map[int]string{2: "é", 3: "€", 4: "𝄞"}[width]
		msg := strings.Repeat("a", maxMessageBytes-1) + strings.Repeat(ch, 8)
		e := ErrorOf(&session.TurnError{Code: "model_error", Message: msg})
		got := e.Body.Message
		if len(got) > maxMessageBytes || !utf8.ValidString(got) {
			t.Errorf("%d-byte characters: message of %d bytes cut to %d bytes, valid UTF-8 %v", width, len(msg), len(got), utf8.ValidString(got))
		}
		if !strings.HasPrefix(msg, got) || len(got) < maxMessageBytes-utf8.UTFMax {
			t.Errorf("%d-byte characters: cut to %d bytes, want the start of the message up to the bound", width, len(got))
		}
	}
}
