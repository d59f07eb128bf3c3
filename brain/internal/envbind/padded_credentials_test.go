package envbind

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A credential given with spaces or tabs around it (pasted with them)
// reaches the provider without them: HTTP carries no white space around
// a header's value. A provider that echoes the Authorization header it
// received, in a failure's message, details or code or in a report, does
// not get Brain to record the credential it quotes.
func TestPaddedCredentialsNeverRecorded(t *testing.T) {
	const sessionCred, routeKey = "sekrit-XYZ-session", "sekrit-XYZ-route"
	var (
		mu        sync.Mutex
		reporters []*envapi.Grant
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmd, err := envapi.DecodeCommand(readBody(r))
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		if cmd.Operation.Environment == "reporting" {
			mu.Lock()
			reporters = append(reporters, cmd.Operation.Reporter)
			mu.Unlock()
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted()))
			return
		}
		if cmd.Operation.Environment == "coded" {
			// A failure code cannot be redacted: the answer is refused.
			code := strings.TrimSpace(strings.TrimPrefix(auth, "Bearer"))
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, envapi.Failure(code, "refused", false, nil)))
			return
		}
		details, _ := json.Marshal(map[string]string{"authorization": auth})
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence,
			envapi.Failure("unauthorized", "refused "+auth, false, details)))
	}))
	defer srv.Close()
	b := testBinder(t, Config{Routes: map[string]Route{"routed": {Endpoint: srv.URL, APIKey: "\t" + routeKey + " "}}})
	dir := t.TempDir()
	store, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	engine, err := session.New(session.Config{Store: store, Environments: b})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())
	create := func(env api.Environment) string {
		t.Helper()
		sum, err := engine.Create(context.Background(), "", api.CreateSessionRequest{
			Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{env},
		})
		if err != nil {
			t.Fatalf("%s: create: %v", env.Name, err)
		}
		return sum.SessionID
	}
	direct := api.Environment{Name: "direct", Driver: api.DriverHTTP, URL: srv.URL, Credential: "  " + sessionCred + "\t"}
	routed := api.Environment{Name: "routed", Driver: "routed"}
	coded := direct
	coded.Name = "coded"
	for _, env := range []api.Environment{direct, routed, coded} {
		if sum, err := engine.Summary(context.Background(), create(env)); err != nil || sum.Status != api.StatusFailed {
			t.Fatalf("%s: session is %+v (%v), want failed (its setup failed)", env.Name, sum, err)
		}
	}
	// A provider reports what it was sent through the binding's
	// reporter: the report is recorded without it.
	direct.Name, routed.Name = "reporting", "reporting"
	for i, env := range []api.Environment{direct, routed} {
		id := create(env)
		mu.Lock()
		g := reporters[i]
		mu.Unlock()
		data, _ := json.Marshal(map[string]string{"seen": "Bearer " + []string{sessionCred, routeKey}[i]})
		redact := func(op session.Operation, raw json.RawMessage) json.RawMessage {
			return b.RedactReport(op, raw, g.Token)
		}
		if _, err := engine.Report(context.Background(), id, api.EnvironmentRef{Name: env.Name, Sequence: 1},
			session.Report{Type: session.ReportEvent, EventType: "seen", Data: data, Redact: redact}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	notJournaled(t, dir, map[string]string{"the session credential": sessionCred, "the route key": routeKey})
}
