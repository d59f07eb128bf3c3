package envbind

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
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

// The reporter tokens of the session's other current bindings outlive
// their operations: a provider that serves several bindings was sent
// each, and what it answers or reports quoting one, once no operation of
// that binding is under way (as after a restart), is recorded with the
// token removed.
func TestRedactRemovesOtherBindingsReporterTokens(t *testing.T) {
	const id = "ses_AAAAAAAAAAAAAAAAAAAA"
	var quiet string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmd, err := envapi.DecodeCommand(readBody(r))
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		details, _ := json.Marshal(map[string]string{"quiet": quiet})
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence,
			envapi.Failure("refused", "the quiet one is "+quiet, false, details)))
	}))
	defer srv.Close()
	b := testBinder(t, Config{})
	key, err := b.serverKey()
	if err != nil {
		t.Fatal(err)
	}
	quiet = reporterToken(key, id, "quiet", 2)
	o := op(srv.URL, 5)
	o.Bindings = []envapi.EnvironmentRef{{Name: "box", Sequence: 1}, {Name: "quiet", Sequence: 2}}
	rc, err := b.Deliver(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rc.Message, quiet) || strings.Contains(string(rc.Details), quiet) {
		t.Errorf("receipt of box keeps the reporter token of quiet: %+v", rc)
	}
	// A fresh Binder on the same key holds no grant of the session.
	b = testBinder(t, Config{})
	in, _ := json.Marshal(map[string]string{"quiet": quiet})
	got := b.RedactReport(o, in, reporterToken(key, id, "box", 1))
	var m map[string]string
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if m["quiet"] != redacted {
		t.Errorf("report of box keeps the reporter token of quiet: %s", got)
	}
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}
