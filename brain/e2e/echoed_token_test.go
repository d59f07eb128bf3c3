package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestEchoedTokensNeverReachTheJournal: an agentloop that writes its
// callback token into what it sends (an event's data, a stored value, a
// transcript) and a provider that writes its reporter token into a report
// have their calls recorded with the tokens removed: neither the events
// nor any file of the data directory holds them.
func TestEchoedTokensNeverReachTheJournal(t *testing.T) {
	b, c, f, id, g := parkedLoop(t)
	var reporter *envapi.Grant
	for _, op := range f.received(envapi.RequestSetup) {
		if op.Cmd.Operation.Environment == "box" {
			reporter = op.Cmd.Operation.Reporter
		}
	}
	if reporter == nil {
		t.Fatal("the setup of box carried no reporter")
	}
	// The callback token as it is, and written with a JSON escape.
	escaped := fmt.Sprintf(`\u%04x`, g.Token[0]) + g.Token[1:]
	for _, call := range []struct {
		method string
		input  string
	}{
		{"emit", `{"event_type":"echo","data":{"token":"` + g.Token + `","escaped":"x` + escaped + `y"}}`},
		{"kv_put", `{"key":"k","value":{"` + g.Token + `":"Bearer ` + g.Token + `"}}`},
		{"set_transcript", `[{"role":"user","content":[{"type":"text","text":"my token is ` + g.Token + `"}]}]`},
	} {
		if status, body := postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: call.method, Input: json.RawMessage(call.input)}); status != http.StatusOK {
			t.Fatalf("%s: %d %s", call.method, status, body)
		}
	}
	report := map[string]any{"type": "event", "event_type": "box_state", "data": map[string]string{"reporter": reporter.Token}}
	if status, body := postGrant(t, reporter.URL, reporter.Token, report); status != http.StatusOK {
		t.Fatalf("report: %d %s", status, body)
	}
	secrets := []string{g.Token, reporter.Token}
	check := func(where string, data []byte) {
		t.Helper()
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds a token", where)
			}
		}
	}
	evs := c.events(id)
	raw, _ := json.Marshal(evs)
	check("events", raw)
	if !bytes.Contains(raw, []byte(`"event_type":"echo"`)) || !bytes.Contains(raw, []byte(`"event_type":"box_state"`)) {
		t.Fatalf("the echoed events were not recorded: %s", kindsLine(evs))
	}
	tr := c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id+"/transcript", nil, nil)
	check("transcript", tr)
	if !bytes.Contains(tr, []byte("my token is [redacted]")) {
		t.Errorf("transcript %s, want the token replaced", tr)
	}
	scanFiles(t, b.Dir, check)
}
