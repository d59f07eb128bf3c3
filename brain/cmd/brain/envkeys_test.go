package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServeRefusesEnvironmentKeyNoHeaderCarries: an environment
// credential read with its line end (BRAIN_ENVIRONMENT_API_KEY=$(cat) of
// a CRLF file, a routes file written with "\n" in a key), or with white
// space at an end, can never arrive in an Authorization header: every
// session's environment setup failed as unreachable. "brain serve"
// refuses it as a setting (exit 2) before it creates the data directory,
// naming the flag and variable, or the routes file and the route, never
// quoting the key. Keys a header carries serve.
func TestServeRefusesEnvironmentKeyNoHeaderCarries(t *testing.T) {
	const base = "http://127.0.0.1:9"
	bad := []string{"sekrit-key\r", "sekrit-key\n", " sekrit-key", "sekrit-key\t", "sekrit\x01key", "sekrit\x7fkey"}
	refused := func(what string, code int, stderr string, served bool, dataDir string, names ...string) {
		t.Helper()
		if served || code != 2 || strings.Contains(stderr, "sekrit") {
			t.Errorf("%s: served %v, exit %d, stderr %q; want exit 2 without the key", what, served, code, stderr)
		}
		for _, n := range names {
			if !strings.Contains(stderr, n) {
				t.Errorf("%s: stderr %q does not name %s", what, stderr, n)
			}
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the data directory was created (%v)", what, err)
		}
	}
	for _, key := range bad {
		dataDir := filepath.Join(t.TempDir(), "data")
		code, stderr, served := serveIn(t, dataDir, "--no-auth", "--no-workspace", "--environment-base-url", base, "--environment-api-key", key)
		refused("--environment-api-key "+strconv.Quote(strings.ReplaceAll(key, "sekrit", "k")), code, stderr, served, dataDir, "--environment-api-key (BRAIN_ENVIRONMENT_API_KEY)")

		routes, err := json.Marshal(map[string]any{
			"good":  map[string]string{"endpoint": base, "api_key": "a-key"},
			"notes": map[string]string{"endpoint": base, "api_key": key},
		})
		if err != nil {
			t.Fatal(err)
		}
		file := writeFile(t, t.TempDir(), "routes.json", string(routes))
		for _, extra := range [][]string{nil, {"--no-workspace"}} {
			dataDir := filepath.Join(t.TempDir(), "data")
			code, stderr, served := serveIn(t, dataDir, append([]string{"--no-auth", "--environment-routes-file", file}, extra...)...)
			refused("routes file api_key "+strconv.Quote(strings.ReplaceAll(key, "sekrit", "k")), code, stderr, served, dataDir,
				"--environment-routes-file", "BRAIN_ENVIRONMENT_ROUTES_FILE", file, `"notes"`)
			if strings.Contains(stderr, `"good"`) {
				t.Errorf("stderr %q names the route whose key is fine", stderr)
			}
		}
	}
	t.Run("variable", func(t *testing.T) {
		t.Setenv("BRAIN_ENVIRONMENT_API_KEY", "sekrit-key\r\n")
		dataDir := filepath.Join(t.TempDir(), "data")
		code, stderr, served := serveIn(t, dataDir, "--no-auth", "--no-workspace", "--environment-base-url", base)
		refused("BRAIN_ENVIRONMENT_API_KEY with a line end", code, stderr, served, dataDir, "BRAIN_ENVIRONMENT_API_KEY")
	})
	good := writeFile(t, t.TempDir(), "routes.json", `{"notes":{"endpoint":"`+base+`","api_key":"a key with inner spaces"}}`)
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--environment-base-url", base, "--environment-api-key", "plain-key", "--environment-routes-file", good); !served || code != 0 {
		t.Errorf("keys a header carries: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// serveIn is serveOnce over the data directory dataDir.
func serveIn(t *testing.T, dataDir string, args ...string) (code int, stderr string, served bool) {
	t.Helper()
	return serveOnce(t, append([]string{"--data-dir", dataDir}, args...)...)
}
