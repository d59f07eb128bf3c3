package brain_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
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
		Agentloops:     brain.Agentloops{MaxLinearMemoryBytes: 100, MaxScratchBytes: -1},
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
		"Agentloops.MaxScratchBytes":        "BRAIN_MAX_SCRATCH_BYTES",
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

// TestSealingKeyFileNeedsDatabase: the sealing key file is the key of the
// nodes sharing a database; given without a database URL (a cluster node
// whose database setting is missing or misspelled) it would be ignored
// and the node would run alone on its data directory, so New refuses it,
// naming the field and its variable, before touching the data directory.
func TestSealingKeyFileNeedsDatabase(t *testing.T) {
	dir := t.TempDir() + "/data"
	_, err := brain.New(context.Background(), brain.Config{DataDir: dir,
		Storage: brain.Storage{SealingKeyFile: t.TempDir() + "/key"}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Storage.SealingKeyFile" ||
		ce.Problems[0].Env != "BRAIN_SEALING_KEY_FILE" || !strings.Contains(err.Error(), "BRAIN_DATABASE_URL") {
		t.Fatalf("New = %v, want a ConfigError naming Storage.SealingKeyFile and BRAIN_DATABASE_URL", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created: %v", err)
	}
}

// TestBadSettingFilesRefusedBeforeDataDirectory: a providers file or an
// environment routes file that cannot be used, or a route Brain would not
// call, stops New before it creates the data directory, so that a
// mistyped setting leaves nothing behind.
func TestBadSettingFilesRefusedBeforeDataDirectory(t *testing.T) {
	missing := t.TempDir() + "/missing.json"
	for name, cfg := range map[string]brain.Config{
		"providers file": {Models: brain.Models{ProvidersFile: missing}},
		"routes file":    {Environments: brain.Environments{RoutesFile: missing}},
		"plain http route": {Environments: brain.Environments{
			Routes: map[string]brain.EnvironmentRoute{"box": {Endpoint: "http://box.example"}}}},
		"telemetry file in a missing directory": {Telemetry: brain.Telemetry{File: missing + "/telemetry.jsonl"}},
		"filesystem allow list":                 {Agentloops: brain.Agentloops{FilesystemAllow: []string{"relative/dir"}}},
		"secret allow list":                     {Agentloops: brain.Agentloops{SecretAllow: map[string]string{"k": "relative/file"}}},
	} {
		cfg.DataDir = t.TempDir() + "/data"
		srv, err := brain.New(context.Background(), cfg)
		if err == nil {
			srv.Close(context.Background())
			t.Errorf("%s: New succeeded", name)
			continue
		}
		if _, serr := os.Stat(cfg.DataDir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: New = %v and left the data directory (%v)", name, err, serr)
		}
	}
}

// TestUnreachableDatabaseRefusedClearly: a database that cannot be
// reached stops New with an error that says so, without quoting the
// password of the URL and without blaming a full journal queue.
func TestUnreachableDatabaseRefusedClearly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	key := t.TempDir() + "/sealing.key"
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = brain.New(context.Background(), brain.Config{DataDir: t.TempDir(),
		Storage: brain.Storage{DatabaseURL: "postgres://brain:sekrit@" + addr + "/brain?connect_timeout=5", SealingKeyFile: key}})
	if err == nil {
		t.Fatal("New succeeded without a database")
	}
	msg := err.Error()
	if !strings.Contains(msg, "database unavailable") || strings.Contains(msg, "queue") || strings.Contains(msg, "sekrit") {
		t.Errorf("New = %v, want an unavailable database named, no queue, no password", err)
	}
}

// TestTokenNoHeaderCarriesRefused: a token with white space at an end
// (a line end read with it) or a control character can never arrive in
// an Authorization header, so every request would answer 401. New refuses
// it as the Token field and its variable, without quoting it, before it
// touches the data directory.
func TestTokenNoHeaderCarriesRefused(t *testing.T) {
	for _, tok := range []string{"sekrit\n", "sekrit\r\n", " sekrit", "sekrit ", "sek\x00rit", "sek\x7frit"} {
		dir := t.TempDir() + "/data"
		srv, err := brain.New(context.Background(), brain.Config{DataDir: dir, Token: tok})
		if err == nil {
			srv.Close(context.Background())
		}
		var ce *brain.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Token" ||
			ce.Problems[0].Env != "BRAIN_API_TOKEN" || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("token %q: New = %v, want a ConfigError of Token (BRAIN_API_TOKEN) that does not quote it", tok, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token %q: the data directory was created: %v", tok, err)
		}
	}
}

// TestDatabaseURLNeedsSealingKeyFile: the nodes sharing a database seal
// credentials with the key file; a database URL without it is an
// incomplete configuration, refused as the SealingKeyFile field naming the
// database's variable too, before the data directory is touched and
// without quoting the URL's password.
func TestDatabaseURLNeedsSealingKeyFile(t *testing.T) {
	dir := t.TempDir() + "/data"
	_, err := brain.New(context.Background(), brain.Config{DataDir: dir,
		Storage: brain.Storage{DatabaseURL: "postgres://brain:sekrit@127.0.0.1:1/brain"}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Storage.SealingKeyFile" ||
		ce.Problems[0].Env != "BRAIN_SEALING_KEY_FILE" || !strings.Contains(err.Error(), "BRAIN_DATABASE_URL") ||
		strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("New = %v, want a ConfigError of Storage.SealingKeyFile naming BRAIN_DATABASE_URL", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created: %v", err)
	}
}

// TestDatabaseURLSchemeIsASetting: a database URL whose scheme no backend
// serves is a setting New refuses (a ConfigError of Storage.DatabaseURL),
// before the data directory is touched.
func TestDatabaseURLSchemeIsASetting(t *testing.T) {
	dir := t.TempDir() + "/data"
	_, err := brain.New(context.Background(), brain.Config{DataDir: dir,
		Storage: brain.Storage{DatabaseURL: "nosuchdb://user:sekrit@db.example/brain", SealingKeyFile: t.TempDir() + "/key"}})
	var ce *brain.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Storage.DatabaseURL" ||
		!strings.Contains(err.Error(), "nosuchdb") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("New = %v, want a ConfigError of Storage.DatabaseURL naming the scheme only", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created: %v", err)
	}
}

// TestSocketDatabaseURLAccepted: a PostgreSQL URL without a host (the
// server's Unix socket, its directory in the host parameter) is a URL the
// database driver takes; New tries the database instead of refusing the
// setting as not a URL.
func TestSocketDatabaseURLAccepted(t *testing.T) {
	key := t.TempDir() + "/sealing.key"
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(),
		Storage: brain.Storage{DatabaseURL: "postgres:///brain?host=" + t.TempDir() + "&password=sekrit", SealingKeyFile: key}})
	var ce *brain.ConfigError
	if errors.As(err, &ce) || err == nil || !strings.Contains(err.Error(), "database unavailable") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("New = %v, want the socket tried and found unavailable", err)
	}
}

// TestOperatorModelKeyNoHeaderCarriesRefused: an operator's model key
// holding a control character (a line end read with it from a file) can
// never be sent; New refuses it naming the variable "brain serve" reads it
// from, without quoting it, instead of every session that would use it
// being refused as an invalid request.
func TestOperatorModelKeyNoHeaderCarriesRefused(t *testing.T) {
	for provider, env := range map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"} {
		dir := t.TempDir() + "/data"
		srv, err := brain.New(context.Background(), brain.Config{DataDir: dir,
			Models: brain.Models{APIKeys: map[string]string{provider: "sekrit-key\r\n", "other": ""}}})
		if err == nil {
			srv.Close(context.Background())
		}
		var ce *brain.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Models.APIKeys["+provider+"]" ||
			ce.Problems[0].Env != env || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s key: New = %v, want a ConfigError of Models.APIKeys[%s] (%s) that does not quote it", provider, err, provider, env)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s key: the data directory was created: %v", provider, err)
		}
	}
}

// TestEnvironmentKeyNoHeaderCarriesRefused: an environment credential
// with white space at an end or a control character (a line end read
// with it) can never arrive in an Authorization header, so every session
// reaching its route would fail at creation as environment_unreachable.
// New refuses it, as the default route's key, a route's key or the routes
// file naming the route, without quoting it, before it touches the data
// directory. Keys a header carries are accepted.
func TestEnvironmentKeyNoHeaderCarriesRefused(t *testing.T) {
	const base = "http://127.0.0.1:9"
	for _, key := range []string{"sekrit-key\r", "sekrit-key\n", " sekrit-key", "sekrit-key\t", "sekrit\x01key", "sekrit\x7fkey"} {
		routes, err := json.Marshal(map[string]any{
			"good":  map[string]string{"endpoint": base, "api_key": "a-key"},
			"notes": map[string]string{"endpoint": base, "api_key": key},
		})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "routes.json")
		if err := os.WriteFile(file, routes, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, field, env string
			envs             brain.Environments
			names            []string
		}{
			{"default route", "Environments.APIKey", "BRAIN_ENVIRONMENT_API_KEY",
				brain.Environments{BaseURL: base, APIKey: key}, nil},
			{"route", "Environments.Routes[notes].APIKey", "BRAIN_ENVIRONMENT_ROUTES_FILE",
				brain.Environments{Routes: map[string]brain.EnvironmentRoute{"notes": {Endpoint: base, APIKey: key}}}, nil},
			{"routes file", "Environments.RoutesFile", "BRAIN_ENVIRONMENT_ROUTES_FILE",
				brain.Environments{RoutesFile: file}, []string{file, `"notes"`}},
		} {
			dir := t.TempDir() + "/data"
			srv, err := brain.New(context.Background(), brain.Config{DataDir: dir, Environments: c.envs})
			if err == nil {
				srv.Close(context.Background())
			}
			var ce *brain.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != c.field ||
				ce.Problems[0].Env != c.env || strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), `"good"`) {
				t.Errorf("%s key %q: New = %v, want a ConfigError of %s (%s) alone that does not quote it", c.name, key, err, c.field, c.env)
				continue
			}
			for _, n := range c.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("%s key %q: New = %v, does not name %s", c.name, key, err, n)
				}
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s key %q: the data directory was created: %v", c.name, key, err)
			}
		}
	}
	file := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(file, []byte(`{"notes":{"endpoint":"`+base+`","api_key":"a key with inner spaces"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), Environments: brain.Environments{
		BaseURL: base, APIKey: "plain-key", RoutesFile: file,
		Routes: map[string]brain.EnvironmentRoute{"box": {Endpoint: base, APIKey: "box-key"}}}})
	if err != nil {
		t.Fatalf("keys a header carries: New = %v", err)
	}
	srv.Close(context.Background())
}

// TestURLsNamingNoHostRefused: a URL field that names only a port
// (http://:8000/v1, dialled on this machine under no name) or whose host
// holds a Unicode format character no reader sees (a zero width space,
// also percent-encoded) is refused by New, naming the field and its
// variable, before the data directory is touched: every request to it
// would go to a host the operator did not mean.
func TestURLsNamingNoHostRefused(t *testing.T) {
	for _, u := range []string{"http://:8000/v1", "https://api.ex\u200bample/v1", "https://\u202eelpmaxe.ipa/v1", "https://api.ex%E2%80%8Bample/v1"} {
		for field, c := range map[string]brain.Config{
			"PublicURL":                         {PublicURL: u},
			"Models.OpenAIBaseURL":              {Models: brain.Models{OpenAIBaseURL: u}},
			"Models.AnthropicBaseURL":           {Models: brain.Models{AnthropicBaseURL: u}},
			"Environments.BaseURL":              {Environments: brain.Environments{BaseURL: u}},
			"Environments.Routes[box].Endpoint": {Environments: brain.Environments{Routes: map[string]brain.EnvironmentRoute{"box": {Endpoint: u}}}},
			"OTLP.Endpoint":                     {OTLP: brain.OTLP{Endpoint: strings.TrimSuffix(u, "/v1")}},
			"OTLP.TracesEndpoint":               {OTLP: brain.OTLP{TracesEndpoint: u + "/traces"}},
			"OTLP.LogsEndpoint":                 {OTLP: brain.OTLP{LogsEndpoint: u + "/logs"}},
		} {
			c.DataDir = filepath.Join(t.TempDir(), "data")
			_, err := brain.New(context.Background(), c)
			var ce *brain.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != field || !strings.Contains(ce.Problems[0].Problem, "host") {
				t.Errorf("%s %q: New = %v, want a ConfigError naming %s and the host", field, u, err, field)
				continue
			}
			if _, err := os.Stat(c.DataDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s %q: the data directory was created: %v", field, u, err)
			}
		}
	}
}

// TestDatabaseURLNotParsedSaysWhy: a database URL with a scheme that is
// still no URL (a password holding a character a URL reserves, a port
// that is no number) is refused saying what to fix, not that the scheme
// is missing, and without quoting the password.
func TestDatabaseURLNotParsedSaysWhy(t *testing.T) {
	for _, u := range []string{"postgres://brain:se%krit@db.example/brain", "postgres://brain:sekrit@db.example:port/brain"} {
		_, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir() + "/data",
			Storage: brain.Storage{DatabaseURL: u, SealingKeyFile: t.TempDir() + "/key"}})
		var ce *brain.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "Storage.DatabaseURL" {
			t.Fatalf("%s: New = %v, want a ConfigError of Storage.DatabaseURL", strings.ReplaceAll(u, "sekrit", "***"), err)
		}
		if msg := err.Error(); strings.Contains(msg, "krit") || strings.Contains(msg, "with a scheme") || !strings.Contains(msg, "percent-encode") {
			t.Errorf("New = %q, want it to say to percent-encode the password and give a numeric port, without quoting the password", msg)
		}
	}
}
