package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestGrantTokensCannotUseSessionAPI: a live Tool callback token, a live
// Agentloop callback token and a live binding reporter token are refused
// (401 unauthorized) on every route of the general session API, and the
// refused requests change nothing; right after, each token still works on
// its own endpoint.
func TestGrantTokensCannotUseSessionAPI(t *testing.T) {
	b := newBrain(t, brain.Limits{MaxTurn: time.Minute})
	c := newClient(t, b.URL)

	// Session T: the built-in loop with a Tool that returns and finishes
	// only when the gate "finish" opens, so its callback stays live after
	// the turn ended.
	fT := newFixture(t)
	idT := c.create(api.CreateSessionRequest{
		Environments: []api.Environment{fT.env("box", nil)},
		Tools:        []api.Tool{tool("later", "box", "returned")},
	}).SessionID
	reporter := fT.waitFor(envapi.RequestSetup, 1)[0].Cmd.Operation.Reporter
	if reporter == nil || reporter.Token == "" {
		t.Fatalf("setup carried no reporter grant: %+v", reporter)
	}
	if status, body := c.send(idT, toolCalls("later")); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	toolGrant := fT.received(envapi.RequestExecute)[0].Cmd.Operation.Request.Callback
	if toolGrant == nil || toolGrant.Token == "" {
		t.Fatal("the tool execute carried no callback")
	}
	if evs := c.events(idT); count(evs, api.KindToolCallEnded)+count(evs, api.KindToolCallFailed) != 0 {
		t.Fatalf("the returned tool closed before finish: %s", kindsLine(evs))
	}

	// Session L: a remote Agentloop whose turn hangs until cancelled, so
	// its callback is live.
	fL := newFixture(t)
	idL := c.create(api.CreateSessionRequest{
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"kind":"agentloop"}`), Environment: "agent"},
		Environments: []api.Environment{fL.env("agent", nil)},
	}).SessionID
	hangTurn := c.submit(idL, "hang")
	loopGrant := fL.waitFor(envapi.RequestExecute, 1)[0].Cmd.Operation.Request.Callback
	if loopGrant == nil || loopGrant.Token == "" {
		t.Fatal("the agentloop execute carried no callback")
	}

	grants := []struct {
		name string
		tok  string
	}{
		{"tool callback", toolGrant.Token},
		{"agentloop callback", loopGrant.Token},
		{"reporter", reporter.Token},
	}
	ids := []string{idT, idL}
	before := map[string]api.SessionSummary{}
	turns := map[string]int{}
	for _, id := range ids {
		before[id] = settledSummary(t, c, id)
		turns[id] = count(c.events(id), api.KindTurnStarted)
	}
	sessionsBefore := sessionCount(t, c)

	msg, _ := json.Marshal(api.MessageRequest{Input: api.UserInput{Message: toolCalls("later")}})
	create, _ := json.Marshal(api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "e2e"}, Tools: []api.Tool{}})
	for _, g := range grants {
		probe := func(method, path, body, accept string) {
			t.Helper()
			status, code, raw := scopeProbe(t, b.URL, g.tok, method, path, body, accept)
			if status != http.StatusUnauthorized || code != api.CodeUnauthorized {
				t.Errorf("%s token: %s %s answered %d %q, want 401 %q: %s", g.name, method, path, status, code, api.CodeUnauthorized, raw)
			}
		}
		probe(http.MethodGet, "/v1/sessions", "", "")
		probe(http.MethodPost, "/v1/sessions", string(create), "")
		for _, id := range ids {
			base := "/v1/sessions/" + id
			probe(http.MethodGet, base, "", "")
			probe(http.MethodGet, base+"/transcript", "", "")
			probe(http.MethodGet, base+"/events?after=0", "", "")
			probe(http.MethodGet, base+"/events?after=0", "", "text/event-stream")
			probe(http.MethodPost, base+"/messages", string(msg), "")
			probe(http.MethodPost, base+"/environments", `{"operation":"list"}`, "")
			probe(http.MethodPost, base+"/environments/box/calls/inspect", `{"input":{}}`, "")
			probe(http.MethodPost, base+"/cancel", "", "")
			probe(http.MethodPost, base+"/end", "", "")
			probe(http.MethodDelete, base, "", "")
		}
	}

	// Nothing changed: no record, no turn, no new session.
	for _, id := range ids {
		sum := summaryOf(t, c, id)
		if sum.LastSequence != before[id].LastSequence || sum.Status != before[id].Status {
			t.Errorf("session %s moved from %+v to %+v under refused requests", id, before[id], sum)
		}
		if n := count(c.events(id), api.KindTurnStarted); n != turns[id] {
			t.Errorf("session %s: %d turns started, want %d", id, n, turns[id])
		}
	}
	if n := sessionCount(t, c); n != sessionsBefore {
		t.Errorf("%d sessions after the refused requests, want %d", n, sessionsBefore)
	}

	// The same tokens were live: each still works on its own endpoint.
	if status, body := callGrantBody(t, loopGrant, "kv_read", "a"); status != http.StatusOK || strings.TrimSpace(string(body)) != "{}" {
		t.Errorf("agentloop kv_read = %d %s, want 200 {}", status, body)
	}
	if status, body := callGrantBody(t, loopGrant, "emit", map[string]any{"event_type": "loop_probe", "data": map[string]any{}}); status != http.StatusOK {
		t.Errorf("agentloop emit = %d %s, want 200", status, body)
	} else if sum := summaryOf(t, c, idL); sum.LastSequence <= before[idL].LastSequence {
		t.Errorf("agentloop emit committed nothing: last sequence %d", sum.LastSequence)
	}
	if status, body := callGrantBody(t, toolGrant, "emit", map[string]any{"event_type": "tool_probe", "data": map[string]any{}}); status != http.StatusOK {
		t.Errorf("tool emit = %d %s, want 200", status, body)
	}
	if seq := reportGrant(t, reporter, map[string]any{"type": "event", "event_type": "diag", "data": map[string]any{}}); seq <= before[idT].LastSequence {
		t.Errorf("reporter event committed at %d, want after %d", seq, before[idT].LastSequence)
	}

	// Release what the test holds open.
	c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+idL+"/cancel", nil, nil)
	c.waitEvent(idL, withData(api.KindTurnFailed, "sequence", hangTurn))
	fT.Open("finish")
	if err := <-fT.later; err != nil {
		t.Errorf("finish: %v", err)
	}
}

// scopeProbe sends one general API request authenticated by bearer and
// answers the status, the ApiError code and the body.
func scopeProbe(t *testing.T, base, bearer, method, path, body, accept string) (int, string, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if method == http.MethodPost || method == http.MethodDelete {
		req.Header.Set("Idempotency-Key", key())
	}
	resp, err := (&http.Client{Transport: httpClient.Transport}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "", []byte("(an open event stream)")
	}
	raw, _ := io.ReadAll(resp.Body)
	var e api.ApiError
	if json.Unmarshal(raw, &e) != nil || e.Message == "" {
		return resp.StatusCode, "", raw
	}
	return resp.StatusCode, e.Code, raw
}

// summaryOf reads a session's summary with the operator token.
func summaryOf(t *testing.T, c *apiClient, id string) api.SessionSummary {
	t.Helper()
	var sum api.SessionSummary
	c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil, &sum)
	return sum
}

// settledSummary answers a session's summary once its last sequence held
// still for a while.
func settledSummary(t *testing.T, c *apiClient, id string) api.SessionSummary {
	t.Helper()
	prev := summaryOf(t, c, id)
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		cur := summaryOf(t, c, id)
		if cur == prev {
			return cur
		}
		prev = cur
	}
	t.Fatalf("session %s does not settle: %+v", id, prev)
	return prev
}

// sessionCount answers how many sessions the operator lists.
func sessionCount(t *testing.T, c *apiClient) int {
	t.Helper()
	var list api.SessionList
	c.must(http.StatusOK, http.MethodGet, "/v1/sessions", nil, &list)
	return len(list.Sessions)
}
