package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// goDo runs a request that the crash will interrupt; its outcome is
// irrelevant.
func goDo(c *apiClient, method, path string, body any) { goDoKeyed(c, method, path, key(), body) }

// goDoKeyed is goDo with the Idempotency-Key k.
func goDoKeyed(c *apiClient, method, path, k string, body any) {
	go func() {
		defer func() { _ = recover() }()
		req, _ := json.Marshal(body)
		hr, _ := http.NewRequest(method, c.url+path, strings.NewReader(string(req)))
		hr.Header.Set("Authorization", "Bearer "+operatorToken)
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Idempotency-Key", k)
		if resp, err := c.hc.Do(hr); err == nil {
			resp.Body.Close()
		}
	}()
}

func TestCrash(t *testing.T) {
	t.Run("case34_kill_during_execute", func(t *testing.T) {
		dir := t.TempDir()
		f := newFixture(t)
		ch := startChild(t, dir)
		c := newClient(t, ch.URL)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("slow", "box", "hang")}}).SessionID
		c.submit(id, toolCalls("slow"))
		x := f.waitFor(envapi.RequestExecute, 1)[0]
		rep := f.received(envapi.RequestSetup)[0].Cmd.Operation.Reporter
		ch.kill()

		b := openBrain(t, dir, brain.Limits{})
		c = newClient(t, b.URL)
		var sum api.SessionSummary
		c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil, &sum)
		if sum.Status != api.StatusIdle {
			t.Fatalf("status after restart %s", sum.Status)
		}
		evs := c.events(id)
		tf := ofKind(evs, api.KindToolCallFailed)
		if len(tf) != 1 || dataField[string](t, tf[0], "code") != api.FailureInterrupted || !dataField[bool](t, tf[0], "ambiguous") ||
			dataField[uint64](t, tf[0], "sequence") != x.Cmd.Operation.Sequence {
			t.Fatalf("tool after restart: %s", kindsLine(evs))
		}
		turn := ofKind(evs, api.KindTurnFailed)
		if len(ofKind(evs, api.KindActivationFailed)) != 1 || len(turn) != 1 || dataField[string](t, turn[0], "code") != api.FailureInterrupted {
			t.Fatalf("turn after restart: %s", kindsLine(evs))
		}
		// A later finish with the old token is refused by the new process.
		g := x.Cmd.Operation.Request.Callback
		url := b.URL + g.URL[strings.Index(g.URL, "/v1/"):]
		status, body := postGrant(t, url, g.Token, envapi.ExecutionCall{Method: "finish", Input: json.RawMessage(`{"status":"ok","value":1}`)})
		if status != http.StatusUnauthorized {
			t.Fatalf("finish with the old token: %d %s", status, body)
		}
		// The reporter token survives the restart.
		repURL := b.URL + rep.URL[strings.Index(rep.URL, "/v1/"):]
		if status, body := postGrant(t, repURL, rep.Token, map[string]any{"type": "event", "event_type": "after.restart", "data": nil}); status != http.StatusOK {
			t.Fatalf("reporter after restart: %d %s", status, body)
		}
		// The session works again and nothing was resent.
		if status, body := c.send(id, "hello"); status != http.StatusOK {
			t.Fatalf("message after restart: %d %s", status, body)
		}
		if n := len(f.received(envapi.RequestExecute)); n != 1 {
			t.Fatalf("provider saw %d executes, want exactly 1", n)
		}
	})

	t.Run("case35_kill_during_create", func(t *testing.T) {
		dir := t.TempDir()
		f := newFixture(t)
		ch := startChild(t, dir)
		c := newClient(t, ch.URL)
		goDo(c, http.MethodPost, "/v1/sessions", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m", APIKey: modelKey},
			Tools: []api.Tool{}, Environments: []api.Environment{f.env("box", &bindingConf{Setup: "hold"})}})
		setup := f.waitFor(envapi.RequestSetup, 1)[0]
		ch.kill()
		id := setup.Cmd.Operation.SessionID

		b := openBrain(t, dir, brain.Limits{})
		c = newClient(t, b.URL)
		var sum api.SessionSummary
		c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil, &sum)
		evs := c.events(id)
		sf := ofKind(evs, api.KindEnvironmentSetupFailed)
		if sum.Status != api.StatusFailed || len(sf) != 1 || dataField[string](t, sf[0], "code") != api.FailureInterrupted ||
			len(ofKind(evs, api.KindSessionCreationFailed)) != 1 {
			t.Fatalf("%s: %s", sum.Status, kindsLine(evs))
		}
		c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
		if n := len(f.received(envapi.RequestSetup)); n != 1 {
			t.Errorf("setup sent %d times", n)
		}
	})

	t.Run("case36_kill_during_end", func(t *testing.T) {
		dir := t.TempDir()
		f := newFixture(t)
		ch := startChild(t, dir)
		c := newClient(t, ch.URL)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Detach: "hold"})}}).SessionID
		goDo(c, http.MethodPost, "/v1/sessions/"+id+"/end", nil)
		f.waitFor(envapi.RequestDetach, 1)
		ch.kill()

		b := openBrain(t, dir, brain.Limits{})
		c = newClient(t, b.URL)
		var sum api.SessionSummary
		c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil, &sum)
		evs := c.events(id)
		if sum.Status != api.StatusEnded || len(ofKind(evs, api.KindEnvironmentDetachFailed)) != 1 ||
			len(ofKind(evs, api.KindSessionEndFailed)) != 1 || evs[len(evs)-1].EventType != api.KindSessionEnded {
			t.Fatalf("%s: %s", sum.Status, kindsLine(evs))
		}
		if n := len(f.received(envapi.RequestDetach)); n != 1 {
			t.Errorf("detach sent %d times", n)
		}
	})

	t.Run("kill_during_teardown", func(t *testing.T) {
		// A delete killed while its teardown runs: after the restart the
		// teardown is an ambiguous failure and the session and its
		// environment record remain; the delete's key answers ambiguous
		// and runs nothing, and a delete with a new key tears down again.
		dir := t.TempDir()
		f := newFixture(t)
		ch := startChild(t, dir)
		c := newClient(t, ch.URL)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Teardown: "hold"})}}).SessionID
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, nil)
		k := key()
		goDoKeyed(c, http.MethodDelete, "/v1/sessions/"+id, k, nil)
		f.waitFor(envapi.RequestTeardown, 1)
		ch.kill()

		b := openBrain(t, dir, brain.Limits{})
		c = newClient(t, b.URL)
		var sum api.SessionSummary
		c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, nil, &sum)
		evs := c.events(id)
		tf := ofKind(evs, api.KindEnvironmentTeardownFailed)
		if sum.Status != api.StatusEnded || len(tf) != 1 || dataField[string](t, tf[0], "code") != api.FailureInterrupted || !dataField[bool](t, tf[0], "ambiguous") {
			t.Fatalf("%s: %s", sum.Status, kindsLine(evs))
		}
		status, body := c.do(http.MethodDelete, "/v1/sessions/"+id, nil, map[string]string{"Idempotency-Key": k})
		if status != http.StatusInternalServerError || !strings.Contains(string(body), `"ambiguous"`) {
			t.Fatalf("the killed delete's key = %d %s, want 500 ambiguous", status, body)
		}
		if n := len(f.received(envapi.RequestTeardown)); n != 1 {
			t.Fatalf("teardown sent %d times before a new delete, want 1", n)
		}
		f.Open("teardown")
		c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
		if n := len(f.received(envapi.RequestTeardown)); n != 2 {
			t.Errorf("teardown sent %d times after a delete with a new key, want 2", n)
		}
		c.must(http.StatusNotFound, http.MethodGet, "/v1/sessions/"+id, nil, nil)
	})
}
