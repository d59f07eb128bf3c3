package brain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
)

// TestConfigErrorsNameFieldAndVariable checks that New refuses an invalid
// configuration before touching the data directory, with one problem per
// invalid field naming the field and the variable "brain serve" reads it
// from.
func TestConfigErrorsNameFieldAndVariable(t *testing.T) {
	_, err := brain.New(context.Background(), brain.Config{
		PublicURL: "ftp://brain.example",
		Limits:    brain.Limits{MaxModelCalls: -2, MaxTurn: -time.Second},
		Models:    brain.Models{Timeout: -time.Second, OpenAIBaseURL: "not a url"},
		Environments: brain.Environments{
			Routes:         map[string]brain.EnvironmentRoute{"box": {}},
			ConnectTimeout: -1,
		},
		Agentloops:     brain.Agentloops{MaxLinearMemoryBytes: 100},
		MaxLiveBacklog: -1,
		Storage:        brain.Storage{DatabaseURL: "::"},
	})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *brain.ConfigError", err)
	}
	want := map[string]string{
		"DataDir":                           "BRAIN_DATA_DIR",
		"PublicURL":                         "BRAIN_PUBLIC_URL",
		"Limits.MaxModelCalls":              "BRAIN_MAX_MODEL_CALLS",
		"Limits.MaxTurn":                    "BRAIN_MAX_TURN_SECS",
		"Models.Timeout":                    "BRAIN_MAX_MODEL_SECS",
		"Models.OpenAIBaseURL":              "BRAIN_OPENAI_BASE_URL",
		"Environments.Routes[box].Endpoint": "BRAIN_ENVIRONMENT_ROUTES_FILE",
		"Environments.ConnectTimeout":       "BRAIN_MAX_ENVIRONMENT_CONNECT_SECS",
		"Agentloops.MaxLinearMemoryBytes":   "BRAIN_MAX_LINEAR_MEMORY_BYTES",
		"MaxLiveBacklog":                    "BRAIN_MAX_LIVE_BACKLOG",
		"Storage.DatabaseURL":               "BRAIN_DATABASE_URL",
	}
	got := map[string]string{}
	for _, p := range ce.Problems {
		got[p.Field] = p.Env
		if !strings.Contains(err.Error(), "Config."+p.Field+" ("+p.Env+")") {
			t.Errorf("the error does not name %s (%s): %v", p.Field, p.Env, err)
		}
	}
	for field, env := range want {
		if got[field] != env {
			t.Errorf("problem of %s names %q, want %q (problems: %v)", field, got[field], env, ce.Problems)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(got), len(want), ce.Problems)
	}
}

// TestUnknownStorageBackendRefused checks that a database URL no backend
// serves is refused without quoting the URL, which may hold a password.
func TestUnknownStorageBackendRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := brain.New(context.Background(), brain.Config{DataDir: dir,
		Storage: brain.Storage{DatabaseURL: "nosuchdb://user:sekrit@db.example/brain"}})
	if err == nil || !strings.Contains(err.Error(), "nosuchdb") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("New = %v, want a refusal naming the scheme only", err)
	}
	// The data directory was released: a valid configuration opens it.
	srv, err := brain.New(context.Background(), brain.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
