package envbind

import (
	"encoding/json"
	"strings"
	"testing"
)

// A call made with one operation's grant, and a report of a binding, have
// removed the credential and tokens of every operation of the same
// session whose tokens are live (a provider was sent them all), and
// nothing of another session's.
func TestRedactRemovesTheSessionsLiveTokens(t *testing.T) {
	b := testBinder(t, Config{})
	key, err := b.serverKey()
	if err != nil {
		t.Fatal(err)
	}
	const id, other = "ses_AAAAAAAAAAAAAAAAAAAA", "ses_BBBBBBBBBBBBBBBBBBBB"
	live := func(k grantKey, credential string) string {
		tok := b.grants.mint(k, key, 0)
		b.grants.hide(k, redactor{credential, tok})
		return tok
	}
	loop := live(grantKey{id, 8, false}, "loop-credential-1")
	tool := live(grantKey{id, 11, false}, "tool-credential-2")
	foreign := live(grantKey{other, 11, false}, "foreign-credential-3")
	g, ok := b.Authorize(id, 8, loop)
	if !ok {
		t.Fatal("the loop's token does not authorize its call")
	}
	in, _ := json.Marshal(map[string]string{"loop": loop, "tool": tool, "key": "tool-credential-2", "foreign": foreign})
	for name, got := range map[string]json.RawMessage{
		"call":   g.Redact(in, loop),
		"report": b.RedactReport(op("http://127.0.0.1:1", 3), in, "reporter"),
	} {
		var m map[string]string
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("%s: %s: %v", name, got, err)
		}
		if m["tool"] != redacted || m["key"] != redacted {
			t.Errorf("%s: the tool's live token or credential kept: %s", name, got)
		}
		if name == "call" && m["loop"] != redacted {
			t.Errorf("call: its own token kept: %s", got)
		}
		if m["foreign"] != foreign || strings.Contains(m["foreign"], redacted) {
			t.Errorf("%s: another session's token changed: %s", name, got)
		}
	}
}
