package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestQuotedLiveTokensNeverReachTheJournal: a provider knows every token
// Brain sent it, not only the one it calls with. A report that dumps the
// operation a provider is running (its callback and context grants), an
// agentloop's emit that quotes the callback token of a tool it
// dispatched, and a report whose event type is the binding's credential
// or reporter token leave none of them in the events or on disk: the
// dumps are recorded with the tokens replaced, and the event types are
// refused without being quoted back.
func TestQuotedLiveTokensNeverReachTheJournal(t *testing.T) {
	b, c, f, id, g := parkedLoop(t, tool("slow", "box", "hang"))
	var reporter *envapi.Grant
	var loopContext string
	for _, op := range f.received("") {
		o := op.Cmd.Operation
		if o.Environment == "agent" && o.Reporter != nil {
			reporter = o.Reporter
		}
		if o.Environment == "agent" && o.Request.Type == envapi.RequestExecute && o.Context != nil {
			loopContext = o.Context.Token
		}
	}
	if reporter == nil || loopContext == "" {
		t.Fatal("the agentloop's binding carried no reporter or its execute no context grant")
	}
	// The agentloop dispatches a tool that runs until the turn is
	// cancelled; its execute carries a callback token of its own.
	in, _ := json.Marshal([]envapi.ToolInvocation{{CallID: "c1", Name: "slow", Environment: "box", Input: json.RawMessage(`{}`)}})
	dispatch, _ := json.Marshal(envapi.ExecutionCall{Method: "dispatch", Input: in})
	go func() {
		req, _ := http.NewRequest(http.MethodPost, g.URL, bytes.NewReader(dispatch))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+g.Token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	toolGrant := f.waitFor(envapi.RequestExecute, 2)[1].Cmd.Operation.Request.Callback
	if toolGrant == nil {
		t.Fatal("the tool's execute carried no callback")
	}

	dump := map[string]any{"callback": g, "context": loopContext, "tool": toolGrant}
	if st, body := postGrant(t, reporter.URL, reporter.Token, map[string]any{"type": "event", "event_type": "dump", "data": dump}); st != http.StatusOK {
		t.Fatalf("report of a dump: %d %s", st, body)
	}
	if st, body := callGrantBody(t, g, "emit", map[string]any{"event_type": "loop_dump", "data": dump}); st != http.StatusOK {
		t.Fatalf("emit of a dump: %d %s", st, body)
	}
	secrets := map[string]string{
		"credential": providerToken, "reporter token": reporter.Token, "callback token": g.Token,
		"context token": loopContext, "tool's callback token": toolGrant.Token,
	}
	var answers [][]byte
	for _, eventType := range []string{providerToken, "x" + reporter.Token} {
		st, body := postGrant(t, reporter.URL, reporter.Token, map[string]any{"type": "event", "event_type": eventType, "data": nil})
		if st != http.StatusUnprocessableEntity {
			t.Errorf("report whose event type quotes a secret: %d %s, want 422", st, body)
		}
		answers = append(answers, body)
	}

	check := func(where string, data []byte) {
		t.Helper()
		for name, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("the %s is in %s", name, where)
			}
		}
	}
	evs := c.events(id)
	raw, _ := json.Marshal(evs)
	check("the events", raw)
	for _, kind := range []string{"dump", "loop_dump"} {
		if n := len(ofKind(evs, kind)); n != 1 || !bytes.Contains(ofKind(evs, kind)[0].Data, []byte("[redacted]")) {
			t.Errorf("%d %s events recorded, want one with the tokens replaced: %s", n, kind, kindsLine(evs))
		}
	}
	for i, body := range answers {
		check("answer "+string(rune('a'+i)), body)
	}
	scanFiles(t, b.Dir, check)
}
