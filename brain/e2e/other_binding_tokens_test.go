package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestOtherBindingsReporterTokensNeverReachTheJournal: a provider that
// serves two environments of a session was sent the reporter tokens of
// both. A report of one binding and an emit of its tool that quote the
// other binding's reporter token, once every operation of that binding
// has ended, and again after Brain restarts, are recorded with the token
// replaced: it is in no event and no file of the data directory.
func TestOtherBindingsReporterTokensNeverReachTheJournal(t *testing.T) {
	dir := t.TempDir()
	b := openBrain(t, dir, brain.Limits{MaxTurn: time.Minute})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{
		Environments: []api.Environment{f.env("quiet", nil), f.env("box", nil)},
		Tools:        []api.Tool{tool("slow", "box", "hang")},
	}).SessionID
	reporters := map[string]*envapi.Grant{}
	for _, op := range f.received(envapi.RequestSetup) {
		reporters[op.Cmd.Operation.Environment] = op.Cmd.Operation.Reporter
	}
	quiet, box := reporters["quiet"], reporters["box"]
	if quiet == nil || box == nil || quiet.Token == box.Token {
		t.Fatalf("setups carried reporters %+v", reporters)
	}
	report := func(base, eventType string) {
		t.Helper()
		u, err := url.Parse(box.URL)
		if err != nil {
			t.Fatal(err)
		}
		data := map[string]string{"other": quiet.Token, "line": "the quiet one is " + quiet.Token}
		if st, body := postGrant(t, base+u.Path, box.Token, map[string]any{"type": "event", "event_type": eventType, "data": data}); st != http.StatusOK {
			t.Fatalf("report of %s: %d %s", eventType, st, body)
		}
	}
	report(b.URL, "dump")

	// The tool runs on box until the turn is cancelled; its callback
	// emits the other binding's token.
	turn := c.submit(id, toolCalls("slow"))
	g := f.waitFor(envapi.RequestExecute, 1)[0].Cmd.Operation.Request.Callback
	if g == nil {
		t.Fatal("the tool's execute carried no callback")
	}
	if st, body := callGrantBody(t, g, "emit", map[string]any{"event_type": "tool_dump", "data": map[string]string{"other": quiet.Token}}); st != http.StatusOK {
		t.Fatalf("emit: %d %s", st, body)
	}
	c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
	c.waitEvent(id, withData(api.KindTurnFailed, "sequence", turn))

	b.close()
	b = openBrain(t, dir, brain.Limits{MaxTurn: time.Minute})
	c = newClient(t, b.URL)
	report(b.URL, "dump")

	evs := c.events(id)
	for kind, n := range map[string]int{"dump": 2, "tool_dump": 1} {
		got := ofKind(evs, kind)
		if len(got) != n {
			t.Fatalf("%d %s events recorded, want %d: %s", len(got), kind, n, kindsLine(evs))
		}
		for _, ev := range got {
			if !bytes.Contains(ev.Data, []byte(`"other":"[redacted]"`)) {
				t.Errorf("%s event recorded as %s, want the token replaced", kind, ev.Data)
			}
		}
	}
	check := func(where string, data []byte) {
		t.Helper()
		if bytes.Contains(data, []byte(quiet.Token)) {
			t.Errorf("the reporter token of quiet is in %s", where)
		}
	}
	raw, _ := json.Marshal(evs)
	check("the events", raw)
	scanFiles(t, dir, check)
}
