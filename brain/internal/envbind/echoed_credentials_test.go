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

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A provider that quotes what it was sent back into its answers (here:
// the bearer credential and the reporter token, in a failure's message and
// details, in an HTTP error code, and in a malformed receipt) does not get
// Brain to journal them: credentials and tokens never reach the journal.
func TestEchoedCredentialsNeverJournaled(t *testing.T) {
	const sessionCred, routeKey = "session-cred-7f3a9c", "route_key_91b2d4"
	var reporterTokens []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		rep := ""
		if g := cmd.Operation.Reporter; g != nil {
			rep = g.Token
			reporterTokens = append(reporterTokens, rep)
		}
		w.Header().Set("Content-Type", "application/json")
		switch cmd.Operation.Environment {
		case "failing":
			details, _ := json.Marshal(map[string]string{"authorization": auth, "reporter": rep})
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence,
				envapi.Failure("unauthorized", "token "+auth+" rejected (reporter "+rep+")", false, details)))
		case "refusing":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"`+auth+`"}`)
		case "garbling":
			_, _ = io.WriteString(w, `{"contract":"environment/v1","sequence":`+jsonUint(cmd.Operation.Sequence)+
				`,"receipt":{"type":"accepted","on_turn_end":"`+auth+` !"}}`)
		}
	}))
	defer srv.Close()
	b := testBinder(t, Config{Routes: map[string]Route{"routed": {Endpoint: srv.URL, APIKey: routeKey}}})
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
	for _, env := range []api.Environment{
		{Name: "failing", Driver: api.DriverHTTP, URL: srv.URL, Credential: sessionCred},
		{Name: "refusing", Driver: "routed"},
		{Name: "garbling", Driver: api.DriverHTTP, URL: srv.URL, Credential: sessionCred},
	} {
		sum, err := engine.Create(context.Background(), "", api.CreateSessionRequest{
			Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{env},
		})
		if err != nil {
			t.Fatalf("%s: create: %v", env.Name, err)
		}
		if sum.Status != api.StatusFailed {
			t.Fatalf("%s: session is %s, want failed (its setup failed)", env.Name, sum.Status)
		}
	}
	if len(reporterTokens) != 3 {
		t.Fatalf("provider saw %d operations, want 3", len(reporterTokens))
	}
	secrets := map[string]string{"session credential": sessionCred, "route api key": routeKey}
	for i, tok := range reporterTokens {
		secrets["reporter token "+string(rune('a'+i))] = tok
	}
	notJournaled(t, dir, secrets)
}

func jsonUint(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// notJournaled fails t when a file under dir, a journal's directory,
// holds one of secrets (named by what each is), or when there is no file
// there to look in.
func notJournaled(t *testing.T, dir string, secrets map[string]string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for name, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s found in %s", name, path)
			}
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walked %d journal files: %v", files, err)
	}
}
