package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func TestBindingLifecycle(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)

	t.Run("case45_setup", func(t *testing.T) {
		f := newFixture(t)
		sum := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Setup: "ok"})}})
		if sum.Status != api.StatusIdle {
			t.Fatalf("status %s", sum.Status)
		}
		evs := c.events(sum.SessionID)
		started := ofKind(evs, api.KindEnvironmentSetupStarted)
		ended := ofKind(evs, api.KindEnvironmentSetupEnded)
		if len(started) != 1 || len(ended) != 1 || len(ofKind(evs, api.KindSessionCreationEnded)) != 1 {
			t.Fatalf("events %s", kindsLine(evs))
		}
		if dataField[uint64](t, ended[0], "sequence") != started[0].Sequence {
			t.Errorf("setup_ended does not reference setup_started: %s", ended[0].Data)
		}
		if ce := ofKind(evs, api.KindSessionCreationEnded); ce[0].Sequence < ended[0].Sequence {
			t.Errorf("session_creation_ended before environment_setup_ended: %s", kindsLine(evs))
		}
		for i, ev := range evs {
			if ev.Sequence != uint64(i+1) {
				t.Fatalf("events not dense: %s", kindsLine(evs))
			}
		}
		ops := f.received("")
		if len(ops) != 1 {
			t.Fatalf("provider received %d operations", len(ops))
		}
		op := ops[0]
		if op.Cmd.Contract != "environment/v1" || op.Cmd.Operation.Request.Type != envapi.RequestSetup ||
			op.Cmd.Operation.Sequence != started[0].Sequence || op.Cmd.Operation.SessionID != sum.SessionID ||
			op.Cmd.Operation.Environment != "box" {
			t.Errorf("setup operation %+v", op.Cmd)
		}
		if op.Auth != "Bearer "+providerToken {
			t.Errorf("provider got Authorization %q", op.Auth)
		}
		if bnd := op.Cmd.Operation.Binding; bnd == nil || bnd.Name != "box" || bnd.Sequence != 1 {
			t.Errorf("binding %+v", bnd)
		}
		if string(op.Cmd.Operation.Configuration) != `{"setup":"ok"}` || string(op.Cmd.Operation.Request.Configuration) != `{"setup":"ok"}` {
			t.Errorf("configuration not forwarded as declared: %s / %s", op.Cmd.Operation.Configuration, op.Cmd.Operation.Request.Configuration)
		}
		rep := op.Cmd.Operation.Reporter
		if rep == nil || rep.URL != b.URL+"/v1/sessions/"+sum.SessionID+"/environments/box/1/events" || rep.Token == "" {
			t.Errorf("reporter grant %+v", rep)
		}
	})

	t.Run("setup_failure_fails_creation", func(t *testing.T) {
		f := newFixture(t)
		sum := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("a", nil), f.env("b", &bindingConf{Setup: "fail"})}})
		if sum.Status != api.StatusFailed {
			t.Fatalf("status %s, want failed", sum.Status)
		}
		evs := c.events(sum.SessionID)
		fail := ofKind(evs, api.KindEnvironmentSetupFailed)
		if len(fail) != 1 || dataField[string](t, fail[0], "code") != "setup_refused" || len(ofKind(evs, api.KindSessionCreationFailed)) != 1 {
			t.Fatalf("events %s", kindsLine(evs))
		}
		// A failed session can be deleted; both bindings are torn down.
		c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+sum.SessionID, nil, nil)
		if n := len(f.received(envapi.RequestTeardown)); n != 2 {
			t.Errorf("teardowns %d, want 2", n)
		}
	})

	t.Run("case32_end", func(t *testing.T) {
		f := newFixture(t)
		sum := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}})
		id := sum.SessionID
		var ended api.SessionSummary
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, &ended)
		if ended.Status != api.StatusEnded {
			t.Fatalf("end answered %s", ended.Status)
		}
		evs := c.events(id)
		if evs[len(evs)-1].EventType != api.KindSessionEnded {
			t.Fatalf("events do not end with session_ended: %s", kindsLine(evs))
		}
		endStarted := ofKind(evs, api.KindSessionEndStarted)
		detach := f.received(envapi.RequestDetach)
		if len(detach) != 1 || len(endStarted) != 1 || detach[0].Cmd.Operation.Sequence <= endStarted[0].Sequence {
			t.Fatalf("detach %v after end started %v: %s", detach, endStarted, kindsLine(evs))
		}
		if status, body := c.send(id, "hello"); status != http.StatusConflict || !strings.Contains(string(body), `"conflict"`) {
			t.Errorf("message after end: %d %s", status, body)
		}
		if n := len(f.received(envapi.RequestTeardown)); n != 0 {
			t.Errorf("provider received %d teardown at end", n)
		}
		c.must(http.StatusOK, http.MethodGet, "/v1/sessions/"+id+"/transcript", nil, nil)
	})

	t.Run("failed_detach_still_ends", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Detach: "fail"})}}).SessionID
		var ended api.SessionSummary
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, &ended)
		evs := c.events(id)
		if ended.Status != api.StatusEnded || len(ofKind(evs, api.KindEnvironmentDetachFailed)) != 1 {
			t.Fatalf("%s: %s", ended.Status, kindsLine(evs))
		}
	})

	t.Run("case33_delete", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Teardown: "fail_once"})}}).SessionID
		if status, _ := c.do(http.MethodDelete, "/v1/sessions/"+id, nil, nil); status != http.StatusConflict {
			t.Fatalf("delete of an idle session: %d", status)
		}
		if n := len(f.received(envapi.RequestTeardown)); n != 0 {
			t.Fatalf("refused delete sent %d teardowns", n)
		}
		if _, err := os.Stat(filepath.Join(b.Dir, "sessions", id)); err != nil {
			t.Fatalf("a refused delete removed the session: %v", err)
		}
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, nil)
		f.FailNext("teardown", 1)
		status, body := c.do(http.MethodDelete, "/v1/sessions/"+id, nil, nil)
		if status < 400 {
			t.Fatalf("delete with a failing teardown answered %d", status)
		}
		if strings.Contains(string(body), providerToken) {
			t.Error("error body carries the credential")
		}
		evs := c.events(id)
		if len(ofKind(evs, api.KindEnvironmentTeardownFailed)) != 1 {
			t.Fatalf("events %s", kindsLine(evs))
		}
		// The environment record remains; a new key tries again.
		c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
		if n := len(f.received(envapi.RequestTeardown)); n != 2 {
			t.Errorf("teardowns %d, want 2", n)
		}
		if status, _ := c.do(http.MethodGet, "/v1/sessions/"+id, nil, nil); status != http.StatusNotFound {
			t.Errorf("GET after delete: %d", status)
		}
		if _, err := os.Stat(filepath.Join(b.Dir, "sessions", id)); !os.IsNotExist(err) {
			t.Errorf("session directory remains: %v", err)
		}
		if _, err := os.Stat(filepath.Join(b.Dir, "server-metadata", "sessions", id+".sealed")); !os.IsNotExist(err) {
			t.Errorf("credentials of a deleted session remain: %v", err)
		}
	})

	t.Run("stream_after_session_ended_closes", func(t *testing.T) {
		// A delete whose teardown failed leaves records after
		// session_ended. A stream resuming after session_ended gets them
		// and then ends, as every stream of an ended session does.
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Teardown: "fail_once"})}}).SessionID
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, nil)
		f.FailNext("teardown", 1)
		if status, _ := c.do(http.MethodDelete, "/v1/sessions/"+id, nil, nil); status < 400 {
			t.Fatalf("delete with a failing teardown answered %d", status)
		}
		evs := c.events(id)
		ended := ofKind(evs, api.KindSessionEnded)
		if len(ended) != 1 || evs[len(evs)-1].EventType != api.KindEnvironmentTeardownFailed {
			t.Fatalf("events %s", kindsLine(evs))
		}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprint(c.url, "/v1/sessions/", id, "/events?after=", ended[0].Sequence), nil)
		req.Header.Set("Authorization", "Bearer "+operatorToken)
		req.Header.Set("Accept", "text/event-stream")
		hc := &http.Client{Timeout: 10 * time.Second, Transport: httpClient.Transport}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("the stream of an ended session stayed open: %v after %q", err, body)
		}
		if !strings.Contains(string(body), "event: "+api.KindEnvironmentTeardownFailed) {
			t.Fatalf("stream %q lacks the records after session_ended", body)
		}
	})

	t.Run("case53_control_list", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{
			Environments: []api.Environment{f.env("box", nil)},
			Tools:        []api.Tool{tool("echo", "box", "echo")},
		}).SessionID
		status, body := c.do(http.MethodPost, "/v1/sessions/"+id+"/environments", map[string]any{"operation": "list"},
			map[string]string{"Idempotency-Key": ""})
		if status != http.StatusBadRequest || !strings.Contains(string(body), "invalid_request") {
			t.Fatalf("list without key: %d %s", status, body)
		}
		var list struct {
			Environments []envapi.EnvironmentView `json:"environments"`
		}
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/environments", map[string]any{"operation": "list"}, &list)
		if len(list.Environments) != 1 {
			t.Fatalf("list %+v", list)
		}
		v := list.Environments[0]
		if v.Reference != (envapi.EnvironmentRef{Name: "box", Sequence: 1}) || v.State != envapi.StateReady ||
			v.Lifecycle != api.LifecycleAutomatic || len(v.Tools) != 1 || v.Tools[0].Name != "echo" {
			t.Errorf("view %+v", v)
		}
		// A malformed request is refused before anything runs.
		if status, _ := c.do(http.MethodPost, "/v1/sessions/"+id+"/environments", map[string]any{"operation": "get"}, nil); status != http.StatusUnprocessableEntity {
			t.Errorf("get without environment: %d", status)
		}
		// Without the server token the control route is closed.
		req, _ := http.NewRequest(http.MethodPost, b.URL+"/v1/sessions/"+id+"/environments", strings.NewReader(`{"operation":"list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("control without the server token: %d", resp.StatusCode)
		}
	})

	t.Run("case54_manual", func(t *testing.T) {
		f := newFixture(t)
		env := f.env("box", nil)
		env.Lifecycle = api.LifecycleManual
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{env}, Tools: []api.Tool{tool("echo", "box", "echo")}}).SessionID
		if n := len(f.received("")); n != 0 {
			t.Fatalf("a manual environment got %d operations at create", n)
		}
		c.send(id, toolCalls("echo"))
		evs := c.events(id)
		end := ofKind(evs, api.KindToolCallEnded)
		if len(end) != 1 || !strings.Contains(string(end[0].Data), `"code":"environment_not_ready"`) || !dataField[bool](t, end[0], "is_error") {
			t.Fatalf("tool before setup: %s", kindsLine(evs))
		}
		if n := len(f.received(envapi.RequestExecute)); n != 0 {
			t.Fatalf("a tool on a declared environment executed %d times", n)
		}
		var view envapi.EnvironmentView
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/environments",
			map[string]any{"operation": "setup", "environment": map[string]any{"name": "box", "sequence": 1}}, &view)
		if view.State != envapi.StateReady || len(f.received(envapi.RequestSetup)) != 1 {
			t.Fatalf("setup answered %+v", view)
		}
		c.send(id, toolCalls("echo"))
		evs = c.events(id)
		end = ofKind(evs, api.KindToolCallEnded)
		if len(end) != 2 || dataField[bool](t, end[1], "is_error") || len(f.received(envapi.RequestExecute)) != 1 {
			t.Fatalf("tool after setup: %s / %s", kindsLine(evs), end[len(end)-1].Data)
		}
	})

	t.Run("names_are_unique", func(t *testing.T) {
		f := newFixture(t)
		status, body := c.do(http.MethodPost, "/v1/sessions", api.CreateSessionRequest{
			Model: api.ModelConfig{Provider: "scripted", Name: "m"}, Tools: []api.Tool{},
			Environments: []api.Environment{f.env("box", nil), f.env("box", nil)},
		}, nil)
		if status != http.StatusUnprocessableEntity && status != http.StatusBadRequest {
			t.Fatalf("duplicate names: %d %s", status, body)
		}
		status, body = c.do(http.MethodPost, "/v1/sessions", api.CreateSessionRequest{
			Model: api.ModelConfig{Provider: "scripted", Name: "m"}, Tools: []api.Tool{},
			Environments: []api.Environment{{Name: "x", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"nowhere"}`)}},
		}, nil)
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("unroutable driver: %d %s", status, body)
		}
		var e api.ApiError
		_ = json.Unmarshal(body, &e)
		if !strings.Contains(e.Message, "no route") {
			t.Errorf("message %q", e.Message)
		}
	})
}
