package clitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/examples/internal/cli"
)

// The credentials set in the environment by the checks below; a usage
// that holds "sekrit" shows one.
const (
	secretToken = "sekrit-operator-token"
	secretKey   = "sekrit-model-key"
)

// TurnCredentials checks the command line of a command that runs a turn,
// as parse reads it: -help, and the usage printed after a mistyped flag,
// list every flag with its default, but the token and the model key may
// come from the environment and their values must not be printed to a
// terminal or a CI log. They still take effect, and flags win over the
// environment.
func TurnCredentials(t *testing.T, parse func(args []string, stderr io.Writer) (cli.Turn, error)) {
	t.Helper()
	t.Setenv("BRAIN_TOKEN", secretToken)
	t.Setenv("BRAIN_MODEL_API_KEY", secretKey)
	for _, args := range [][]string{{"-help"}, {"--no-such-flag"}} {
		var out bytes.Buffer
		if _, err := parse(args, &out); err == nil {
			t.Fatalf("%v: parsed", args)
		}
		if !strings.Contains(out.String(), "BRAIN_TOKEN") || !strings.Contains(out.String(), "BRAIN_MODEL_API_KEY") {
			t.Fatalf("%v: no usage printed:\n%s", args, out.String())
		}
		if strings.Contains(out.String(), "sekrit") {
			t.Errorf("%v: the usage shows a credential:\n%s", args, out.String())
		}
	}
	o, err := parse(nil, io.Discard)
	if err != nil || o.Token != secretToken || o.APIKey != secretKey {
		t.Errorf("from the environment: token %q, key %q, %v", o.Token, o.APIKey, err)
	}
	o, err = parse([]string{"--token", "flag-token", "--api-key", "flag-key"}, io.Discard)
	if err != nil || o.Token != "flag-token" || o.APIKey != "flag-key" {
		t.Errorf("flags over the environment: token %q, key %q, %v", o.Token, o.APIKey, err)
	}
}

// ServerToken checks a command that serves, run as run: "-help", and the
// usage printed after a mistyped flag, never show the token the variable
// env holds; the variable still sets the token the server requires of a
// POST to path once it printed banner followed by its URL.
func ServerToken(t *testing.T, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error, env, banner, path string) {
	t.Helper()
	t.Setenv(env, secretToken)
	for _, args := range [][]string{{"-help"}, {"--no-such-flag"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out, &out); err == nil {
			t.Fatalf("%v: ran", args)
		}
		if !strings.Contains(out.String(), env) {
			t.Fatalf("%v: no usage printed:\n%s", args, out.String())
		}
		if strings.Contains(out.String(), "sekrit") {
			t.Errorf("%v: the usage shows the token:\n%s", args, out.String())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	out := &braintest.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", "127.0.0.1:0"}, out, &braintest.Buffer{}) }()
	url := braintest.WaitLine(t, out, banner)
	for _, c := range []struct {
		auth   string
		authed bool
	}{{"Bearer " + secretToken, true}, {"Bearer wrong", false}} {
		req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", c.auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode != http.StatusUnauthorized) != c.authed {
			t.Errorf("%s: %d", c.auth, resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
