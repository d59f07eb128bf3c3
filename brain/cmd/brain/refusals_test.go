package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveOnce runs "brain serve" with args after a free loopback address, a
// fresh data directory and the error log level, and answers its exit
// status and stderr. A server that starts instead is stopped at once and
// reported as served.
func serveOnce(t *testing.T, args ...string) (code int, stderr string, served bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 64)}
	var errb strings.Builder
	full := append([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"), "--log-level", "error"}, args...)
	done := make(chan int, 1)
	go func() { done <- serve(ctx, full, out, &errb) }()
	timeout := time.After(5 * time.Minute)
	for {
		select {
		case code := <-done:
			return code, errb.String(), false
		case line := <-out.lines:
			if strings.HasPrefix(line, "Brain is serving on ") {
				cancel()
				code := <-done
				return code, errb.String(), true
			}
		case <-timeout:
			t.Fatalf("serve %v neither started nor exited", args)
		}
	}
}

// writeFile writes body to the file name in dir and answers its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRefusesWorkspaceRootWithoutWorkspace: the workspace root is a
// setting of the built-in workspace environment; given beside
// --no-workspace it would do nothing, so start-up stops naming both.
func TestServeRefusesWorkspaceRootWithoutWorkspace(t *testing.T) {
	root := t.TempDir()
	code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--workspace-root", root)
	if served || code != 2 || !strings.Contains(stderr, "--workspace-root") || !strings.Contains(stderr, "--no-workspace") {
		t.Errorf("--workspace-root with --no-workspace: served %v, exit %d, stderr %q", served, code, stderr)
	}
	t.Setenv("BRAIN_WORKSPACE_ROOT", root)
	t.Setenv("BRAIN_NO_WORKSPACE", "1")
	code, stderr, served = serveOnce(t, "--no-auth")
	if served || code != 2 || !strings.Contains(stderr, "BRAIN_WORKSPACE_ROOT") || !strings.Contains(stderr, "BRAIN_NO_WORKSPACE") {
		t.Errorf("BRAIN_WORKSPACE_ROOT with BRAIN_NO_WORKSPACE=1: served %v, exit %d, stderr %q", served, code, stderr)
	}
	t.Setenv("BRAIN_NO_WORKSPACE", "0")
	if code, stderr, served := serveOnce(t, "--no-auth"); !served || code != 0 {
		t.Errorf("BRAIN_WORKSPACE_ROOT with the workspace: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestServeRefusesEnvironmentKeyWithoutBaseURL: the environment API key
// is the credential of the default route --environment-base-url names.
// Without that route it went nowhere (beside the built-in workspace, the
// workspace's own key silently replaced it), so start-up stops naming
// both settings, never the key.
func TestServeRefusesEnvironmentKeyWithoutBaseURL(t *testing.T) {
	const key = "sekrit-environment-key"
	for _, extra := range [][]string{nil, {"--no-workspace"}} {
		args := append([]string{"--no-auth", "--environment-api-key", key}, extra...)
		code, stderr, served := serveOnce(t, args...)
		if served || code != 2 || !strings.Contains(stderr, "--environment-api-key") || !strings.Contains(stderr, "--environment-base-url") ||
			strings.Contains(stderr, key) {
			t.Errorf("%v: served %v, exit %d, stderr %q", args, served, code, stderr)
		}
	}
	t.Setenv("BRAIN_ENVIRONMENT_API_KEY", key)
	code, stderr, served := serveOnce(t, "--no-auth")
	if served || code != 2 || !strings.Contains(stderr, "BRAIN_ENVIRONMENT_API_KEY") || strings.Contains(stderr, key) {
		t.Errorf("BRAIN_ENVIRONMENT_API_KEY alone: served %v, exit %d, stderr %q", served, code, stderr)
	}
	if code, stderr, served := serveOnce(t, "--no-auth", "--environment-base-url", "http://127.0.0.1:9"); !served || code != 0 {
		t.Errorf("the key with its base URL: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestServeRefusesRoutesFileShadowingWorkspace: the built-in workspace
// environment is routed as "workspace". A routes file naming that route
// too (for a "brain env workspace" of the operator's) was silently
// overridden, so sessions declaring driver "workspace" reached the
// built-in one; start-up now stops naming the route and --no-workspace.
func TestServeRefusesRoutesFileShadowingWorkspace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	shadowing := write("shadowing.json", `{"workspace":{"endpoint":"http://127.0.0.1:9","api_key":"sekrit-route-key"}}`)
	code, stderr, served := serveOnce(t, "--no-auth", "--environment-routes-file", shadowing)
	if served || code != 2 || !strings.Contains(stderr, `"workspace"`) || !strings.Contains(stderr, "--no-workspace") ||
		!strings.Contains(stderr, shadowing) || strings.Contains(stderr, "sekrit") {
		t.Errorf("routes file naming workspace: served %v, exit %d, stderr %q", served, code, stderr)
	}
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--environment-routes-file", shadowing); !served || code != 0 {
		t.Errorf("the same file with --no-workspace: served %v, exit %d, stderr %q", served, code, stderr)
	}
	other := write("other.json", `{"notes":{"endpoint":"http://127.0.0.1:9"}}`)
	if code, stderr, served := serveOnce(t, "--no-auth", "--environment-routes-file", other); !served || code != 0 {
		t.Errorf("a file of other routes: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestBoundedSettingsNameTheirFlag: the settings with a range beyond
// "at least 1" (the Wasm memory bound, the telemetry record and file
// bounds) refuse a value out of it naming the flag or variable given,
// like every other bound, and with the same exit status.
func TestBoundedSettingsNameTheirFlag(t *testing.T) {
	for _, c := range []struct{ flag, env, value string }{
		{"max-linear-memory-bytes", "BRAIN_MAX_LINEAR_MEMORY_BYTES", "65535"},
		{"max-linear-memory-bytes", "BRAIN_MAX_LINEAR_MEMORY_BYTES", "4294967297"},
		{"telemetry-max-record-bytes", "BRAIN_TELEMETRY_MAX_RECORD_BYTES", "16777217"},
		{"telemetry-max-record-bytes", "BRAIN_TELEMETRY_MAX_RECORD_BYTES", "2147483648"},
		{"telemetry-max-file-bytes", "BRAIN_TELEMETRY_MAX_FILE_BYTES", "65535"},
	} {
		if _, err := serveConfig(nil, "--"+c.flag, c.value); err == nil || !strings.Contains(err.Error(), "--"+c.flag) {
			t.Errorf("--%s %s: error %v, want one naming --%s", c.flag, c.value, err, c.flag)
		}
		if _, err := serveConfig(map[string]string{c.env: c.value}); err == nil || !strings.Contains(err.Error(), c.env) {
			t.Errorf("%s=%s: error %v, want one naming %s", c.env, c.value, err, c.env)
		}
		if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+c.flag, c.value); served || code != 2 {
			t.Errorf("serve --%s %s: served %v, exit %d, stderr %q", c.flag, c.value, served, code, stderr)
		}
	}
	for _, c := range []struct{ flag, value string }{
		{"max-linear-memory-bytes", "65536"}, {"max-linear-memory-bytes", "4294967296"},
		{"telemetry-max-record-bytes", "16777216"}, {"telemetry-max-file-bytes", "65536"},
	} {
		if _, err := serveConfig(nil, "--"+c.flag, c.value); err != nil {
			t.Errorf("--%s %s: %v", c.flag, c.value, err)
		}
	}
}

// TestServeExitStatus: "brain serve" exits 2 for every setting it refuses,
// whichever layer refuses it (the flags, the variables, the Config
// validation, the safety checks), naming the flag it came from, and 1 when
// serving fails with settings it accepted.
func TestServeExitStatus(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "sealing.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--no-auth", "--max-model-calls", "many"}, "-max-model-calls"},
		{[]string{"--no-auth", "--public-url", "not-a-url"}, "--public-url"},
		{[]string{"--no-auth", "--openai-base-url", "ftp://models"}, "--openai-base-url"},
		{[]string{"--no-auth", "--sealing-key-file", keyFile}, "--sealing-key-file"},
		{[]string{"--listen", "0.0.0.0:0"}, "non-loopback"},
		{[]string{"--no-auth", "--metrics-listen", "0.0.0.0:0"}, "--metrics-listen"},
	} {
		code, stderr, served := serveOnce(t, append(c.args, "--no-workspace")...)
		if served || code != 2 || !strings.Contains(stderr, c.say) {
			t.Errorf("%v: served %v, exit %d, stderr %q; want exit 2 saying %q", c.args, served, code, stderr, c.say)
		}
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--listen", busy.Addr().String()); served || code != 1 || !strings.Contains(stderr, "--listen "+busy.Addr().String()+" (BRAIN_LISTEN)") {
		t.Errorf("an address in use: served %v, exit %d, stderr %q; want exit 1 naming --listen (BRAIN_LISTEN)", served, code, stderr)
	}
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--metrics-listen", busy.Addr().String()); served || code != 1 || !strings.Contains(stderr, "--metrics-listen "+busy.Addr().String()+" (BRAIN_METRICS_LISTEN)") {
		t.Errorf("a metrics address in use: served %v, exit %d, stderr %q; want exit 1 naming --metrics-listen (BRAIN_METRICS_LISTEN)", served, code, stderr)
	}
}

// TestGrantAllowListsNameTheirSetting: an entry of the Wasm Tools' allow
// lists that is not an absolute directory (or "scratch") is refused naming
// the flag and variable it came from, with the exit status of a refused
// setting, instead of as a Config field the operator never wrote.
func TestGrantAllowListsNameTheirSetting(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		env   map[string]string
		args  []string
		names []string
	}{
		{nil, []string{"--env-filesystem-allow", dir + ",relative/docs"}, []string{"--env-filesystem-allow", "BRAIN_ENV_FILESYSTEM_ALLOW", "relative/docs"}},
		{map[string]string{"BRAIN_ENV_FILESYSTEM_ALLOW": "scratch,docs"}, nil, []string{"BRAIN_ENV_FILESYSTEM_ALLOW", `"docs"`}},
		{nil, []string{"--env-secret-allow", "api=secrets/api"}, []string{"-env-secret-allow", "secrets/api"}},
		{map[string]string{"BRAIN_ENV_SECRET_ALLOW": "api=secrets/api"}, nil, []string{"BRAIN_ENV_SECRET_ALLOW", "secrets/api"}},
		{map[string]string{"BRAIN_ENV_SECRET_ALLOW": "../api=" + dir}, nil, []string{"BRAIN_ENV_SECRET_ALLOW", `"../api"`}},
	} {
		_, err := serveConfig(c.env, c.args...)
		for _, name := range c.names {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("env %v args %v: error %v, want one naming %s", c.env, c.args, err, name)
			}
		}
	}
	if _, err := serveConfig(map[string]string{"BRAIN_ENV_FILESYSTEM_ALLOW": dir + ", scratch", "BRAIN_ENV_SECRET_ALLOW": "api=" + dir}); err != nil {
		t.Errorf("absolute directories and scratch: %v", err)
	}
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--env-filesystem-allow", "relative"); served || code != 2 ||
		!strings.Contains(stderr, "--env-filesystem-allow") {
		t.Errorf("serve --env-filesystem-allow relative: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestServeRefusesClusterAndFileBoundsAlone: the lease bounds how long a
// cluster node keeps a session, and the telemetry file bound when that
// file is renamed; given without the database or the file, each would do
// nothing, so start-up stops naming the setting and the one it needs,
// whether it came from its flag or its variable. With it, both serve.
func TestServeRefusesClusterAndFileBoundsAlone(t *testing.T) {
	for _, c := range []struct{ flag, env, value, needs, needsEnv string }{
		{"lease-secs", "BRAIN_LEASE_SECS", "3", "--database-url", "BRAIN_DATABASE_URL"},
		{"telemetry-max-file-bytes", "BRAIN_TELEMETRY_MAX_FILE_BYTES", "1048576", "--telemetry-file", "BRAIN_TELEMETRY_FILE"},
	} {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+c.flag, c.value)
		if served || code != 2 || !strings.Contains(stderr, "--"+c.flag) || !strings.Contains(stderr, c.needs) {
			t.Errorf("--%s %s alone: served %v, exit %d, stderr %q", c.flag, c.value, served, code, stderr)
		}
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace")
			if served || code != 2 || !strings.Contains(stderr, c.env) || !strings.Contains(stderr, c.needsEnv) {
				t.Errorf("%s=%s alone: served %v, exit %d, stderr %q", c.env, c.value, served, code, stderr)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "telemetry.jsonl")
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--telemetry-file", file, "--telemetry-max-file-bytes", "1048576"); !served || code != 0 {
		t.Errorf("the file bound with its file: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestServeRefusesMalformedSettingFiles: a routes or providers file that
// was read and is malformed, a route it names with an endpoint Brain
// cannot use, and a public URL carrying a password are refused settings:
// exit 2 naming the flag, before anything starts, and no route's key in
// the message. A file that cannot be read is a failure to serve (exit 1),
// as documented.
func TestServeRefusesMalformedSettingFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--environment-routes-file", write("routes.json", `{"notes":{"endpoint":"http://127.0.0.1:9","api_key":"sekrit"`)}, "--environment-routes-file"},
		{[]string{"--environment-routes-file", write("far.json", `{"notes":{"endpoint":"http://192.0.2.1:9","api_key":"sekrit"}}`)}, "--environment-routes-file"},
		{[]string{"--providers-file", write("providers.json", `[{"name":`)}, "--providers-file"},
		{[]string{"--public-url", "http://user:sekrit@127.0.0.1:8080"}, "--public-url"},
	} {
		code, stderr, served := serveOnce(t, append([]string{"--no-auth", "--no-workspace"}, c.args...)...)
		if served || code != 2 || !strings.Contains(stderr, c.say) || strings.Contains(stderr, "sekrit") {
			t.Errorf("%v: served %v, exit %d, stderr %q; want exit 2 naming %s", c.args, served, code, stderr, c.say)
		}
	}
	missing := filepath.Join(dir, "missing.json")
	for _, flag := range []string{"--environment-routes-file", "--providers-file"} {
		if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", flag, missing); served || code != 1 || !strings.Contains(stderr, missing) {
			t.Errorf("%s naming no file: served %v, exit %d, stderr %q; want exit 1", flag, served, code, stderr)
		}
	}
}

// TestServeRefusesIncompleteDatabaseSettings: a database URL without the
// sealing key file its nodes share, or with a scheme no backend serves, is
// a refused setting (exit 2) naming the flags, not a failure to serve,
// and never quotes the URL's password. A URL without a host (a Unix
// socket) is not refused as malformed: serving fails on the database.
func TestServeRefusesIncompleteDatabaseSettings(t *testing.T) {
	keyFile := writeFile(t, t.TempDir(), "sealing.key", strings.Repeat("ab", 32))
	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"--database-url", "postgres://brain:sekrit@127.0.0.1:1/brain"}, []string{"--sealing-key-file (BRAIN_SEALING_KEY_FILE)", "BRAIN_DATABASE_URL"}},
		{[]string{"--database-url", "nosuchdb://brain:sekrit@db.example/brain", "--sealing-key-file", keyFile}, []string{"--database-url (BRAIN_DATABASE_URL)", "nosuchdb"}},
	} {
		code, stderr, served := serveOnce(t, append(c.args, "--no-auth", "--no-workspace")...)
		if served || code != 2 || strings.Contains(stderr, "sekrit") {
			t.Errorf("%v: served %v, exit %d, stderr %q; want exit 2", c.args, served, code, stderr)
		}
		for _, say := range c.says {
			if !strings.Contains(stderr, say) {
				t.Errorf("%v: stderr %q does not say %q", c.args, stderr, say)
			}
		}
	}
	socket := "postgres:///brain?host=" + t.TempDir() + "&password=sekrit"
	code, stderr, served := serveOnce(t, "--database-url", socket, "--sealing-key-file", keyFile, "--no-auth", "--no-workspace")
	if served || code != 1 || !strings.Contains(stderr, "database unavailable") || strings.Contains(stderr, "sekrit") {
		t.Errorf("a socket URL: served %v, exit %d, stderr %q; want exit 1, the database unavailable", served, code, stderr)
	}
}
