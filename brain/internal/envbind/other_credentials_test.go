package envbind

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A provider that serves several environments of a session was sent the
// credential of each. Once an environment's operations have ended, and
// after a restart, what the provider answers, reports or sends through a
// grant for another environment of the session, quoting that credential
// (the session's credential of the environment or the key of its route),
// is journaled with the credential removed.
func TestOtherEnvironmentsCredentialsNeverJournaled(t *testing.T) {
	const credA, credB, routeKey = "cred-a-5e1d77", "cred-b-8c2f31", "route-key-4b9a06"
	quote := credA + " " + credB + " " + routeKey
	srv := provider(t, func(_ context.Context, op envapi.Operation) envapi.Receipt {
		if op.Environment != "d" {
			return envapi.Accepted()
		}
		details, _ := json.Marshal(map[string]string{"known": quote})
		return envapi.Failure("refused", "I know "+quote, false, details)
	})
	routes := map[string]Route{"routed": {Endpoint: srv.URL, APIKey: routeKey}}
	dir, secrets := t.TempDir(), session.NewMemSecrets()
	open := func() (*session.Engine, *Binder, func()) {
		store, err := journal.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := testBinder(t, Config{Routes: routes})
		engine, err := session.New(session.Config{Store: store, Environments: b, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		return engine, b, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = engine.Close(ctx)
			_ = store.Close()
		}
	}
	engine, _, closeEngine := open()
	sum, err := engine.Create(context.Background(), "", api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{
			{Name: "a", Driver: api.DriverHTTP, URL: srv.URL, Credential: credA},
			{Name: "b", Driver: api.DriverHTTP, URL: srv.URL, Credential: credB},
			{Name: "c", Driver: "routed"},
			{Name: "d", Driver: api.DriverHTTP, URL: srv.URL, Lifecycle: api.LifecycleManual},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status == api.StatusFailed {
		t.Fatalf("session %s", sum.Status)
	}
	closeEngine()

	// After a restart: an operation of d, and a report of b.
	engine, b, closeEngine := open()
	defer closeEngine()
	ctx := context.Background()
	raw, err := engine.Control(ctx, sum.SessionID, envapi.ControlRequest{Operation: envapi.ControlSetup, Environment: &envapi.EnvironmentRef{Name: "d", Sequence: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var view envapi.EnvironmentView
	if err := json.Unmarshal(raw, &view); err != nil || view.State != envapi.StateFailed {
		t.Fatalf("setup of d: %s %v", raw, err)
	}
	key, err := b.serverKey()
	if err != nil {
		t.Fatal(err)
	}
	tok := reporterToken(key, sum.SessionID, "b", 1)
	data, _ := json.Marshal(map[string]string{"known": quote})
	if _, err := engine.Report(ctx, sum.SessionID, api.EnvironmentRef{Name: "b", Sequence: 1}, session.Report{
		Type: session.ReportEvent, EventType: "note", Data: data,
		Redact: func(op session.Operation, raw json.RawMessage) json.RawMessage { return b.RedactReport(op, raw, tok) },
	}); err != nil {
		t.Fatal(err)
	}
	notJournaled(t, dir, map[string]string{"credential a": credA, "credential b": credB, "the route key": routeKey})
	if n := strings.Count(string(mustJournalText(t, dir)), redacted); n < 3 {
		t.Errorf("%d redactions journaled, want the answer and the report redacted", n)
	}
}

// mustJournalText answers the bytes of every file under dir.
func mustJournalText(t *testing.T, dir string) []byte {
	t.Helper()
	var out []byte
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		out = append(out, raw...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A call made with an execute's grant has the credentials of the
// session's other environments removed from its input, as its receipt
// has: a route's key and a session credential.
func TestCallsHideOtherEnvironmentsCredentials(t *testing.T) {
	const credB, routeKey = "secret-b-31f0aa", "route-key-77c2e9"
	var got envapi.Command
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"contract":"environment/v1","sequence":5,"receipt":{"type":"failure","code":"refused","message":"`+
			credB+` `+routeKey+`","retryable":false}}`)
	}))
	defer srv.Close()
	b := testBinder(t, Config{Routes: map[string]Route{"routed": {Endpoint: srv.URL, APIKey: routeKey}}})
	o := op(srv.URL, 5)
	o.Request = envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, &envapi.Grant{Methods: envapi.ToolMethods()})
	o.CallbackDone = make(chan struct{})
	o.Targets = []session.Target{
		{Authorized: o.Declaration, Credential: o.Credential},
		{Authorized: api.Environment{Name: "b", Driver: api.DriverHTTP, URL: srv.URL}, Credential: credB},
		{Authorized: api.Environment{Name: "c", Driver: "routed"}},
	}
	rc, err := b.Deliver(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rc.Message, credB) || strings.Contains(rc.Message, routeKey) {
		t.Errorf("receipt keeps another environment's credential: %q", rc.Message)
	}
	g, ok := b.Authorize(o.SessionID, 5, got.Operation.Request.Callback.Token)
	if !ok {
		t.Fatal("the callback token does not authorize its call")
	}
	in, _ := json.Marshal(map[string]string{"b": credB, "c": routeKey})
	if out := g.Redact(in, got.Operation.Request.Callback.Token); bytes.Contains(out, []byte(credB)) || bytes.Contains(out, []byte(routeKey)) {
		t.Errorf("call input keeps another environment's credential: %s", out)
	}
}
