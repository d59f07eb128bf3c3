package main

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"strings"
	"testing"
)

// TestUsageNeverShowsCredentials: "brain serve --help", and the usage
// printed after a mistyped flag, list every flag with its default; the
// defaults come from the environment, but the values of the token, the
// environment credential and the database URL (which holds a password)
// are credentials and must not be printed to a terminal or a log.
func TestUsageNeverShowsCredentials(t *testing.T) {
	secrets := map[string]string{
		"BRAIN_API_TOKEN":           "sekrit-api-token-1",
		"BRAIN_ENVIRONMENT_API_KEY": "sekrit-environment-key-2",
		"BRAIN_DATABASE_URL":        "postgres://brain:sekrit-db-password-3@db.example/brain",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	for _, args := range [][]string{{"--help"}, {"--no-such-flag"}} {
		var stdout, stderr bytes.Buffer
		serve(t.Context(), args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if !strings.Contains(out, "BRAIN_API_TOKEN") {
			t.Fatalf("%v: no usage printed:\n%s", args, out)
		}
		for k, v := range secrets {
			if strings.Contains(out, v) || strings.Contains(out, "sekrit") {
				t.Errorf("%v: the usage shows the value of %s", args, k)
			}
		}
	}
	// The variables still take effect (the database URL beside the
	// sealing key file it requires).
	env := map[string]string{"BRAIN_SEALING_KEY_FILE": "/etc/brain/sealing.key"}
	maps.Copy(env, secrets)
	cfg, err := serveConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token != secrets["BRAIN_API_TOKEN"] || cfg.Environments.APIKey != secrets["BRAIN_ENVIRONMENT_API_KEY"] ||
		cfg.Storage.DatabaseURL != secrets["BRAIN_DATABASE_URL"] {
		t.Errorf("the credentials did not reach the Config")
	}
	cfg, err = serveConfig(env, "--token", "from-the-flag")
	if err != nil || cfg.Token != "from-the-flag" {
		t.Errorf("--token over BRAIN_API_TOKEN: token %q, err %v", cfg.Token, err)
	}
}

// TestOTLPTimeoutBeyondDurationRefused: an exporter timeout in
// milliseconds that does not fit a time.Duration is refused naming its
// variable, not wrapped around to a tiny or negative timeout.
func TestOTLPTimeoutBeyondDurationRefused(t *testing.T) {
	// 18446744073710 ms is 2^64 ns plus 448384 ns: it would wrap to
	// less than half a millisecond.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"} {
		for _, v := range []string{"18446744073710", "9223372036855", "9223372036854775807"} {
			o, err := otlpFromEnv(func(k string) (string, bool) {
				if k == name {
					return v, true
				}
				return "", false
			})
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: accepted as %+v (err %v), want an error naming %s", name, v, o, err, name)
			}
		}
	}
	// The largest timeout that fits is accepted.
	o, err := otlpFromEnv(func(k string) (string, bool) {
		if k == "OTEL_EXPORTER_OTLP_TIMEOUT" {
			return "9223372036854", true
		}
		return "", false
	})
	if err != nil || o.Timeout <= 0 {
		t.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=9223372036854: %v, %v", o.Timeout, err)
	}
}

// TestZeroIsNotSilentlyReplaced: for the settings that have no unbounded
// form, 0 stops start-up naming the variable or flag, as for the
// BRAIN_MAX_* bounds, instead of silently running with another value (the
// request body timeout became 1 s, the lease 10 s, the heartbeat 15 s and
// the telemetry bounds their defaults).
func TestZeroIsNotSilentlyReplaced(t *testing.T) {
	for _, c := range []struct{ env, flag string }{
		{"BRAIN_REQUEST_BODY_TIMEOUT_SECS", "request-body-timeout-secs"},
		{"BRAIN_LEASE_SECS", "lease-secs"},
		{"BRAIN_SSE_HEARTBEAT_SECS", "heartbeat-secs"},
		{"BRAIN_TELEMETRY_MAX_RECORD_BYTES", "telemetry-max-record-bytes"},
		{"BRAIN_TELEMETRY_MAX_FILE_BYTES", "telemetry-max-file-bytes"},
		{"BRAIN_TELEMETRY_SESSION_RATE", "telemetry-session-rate"},
		{"BRAIN_TELEMETRY_RATE", "telemetry-rate"},
	} {
		if _, err := serveConfig(map[string]string{c.env: "0"}); err == nil || !strings.Contains(err.Error(), c.env) {
			t.Errorf("%s=0: error %v, want one naming %s", c.env, err, c.env)
		}
		if _, err := serveConfig(nil, "--"+c.flag, "0"); err == nil || !strings.Contains(err.Error(), "-"+c.flag) {
			t.Errorf("--%s 0: error %v, want one naming --%s", c.flag, err, c.flag)
		}
		if _, err := serveConfig(map[string]string{c.env: "3"}); err != nil && !strings.Contains(err.Error(), "TELEMETRY_MAX") {
			t.Errorf("%s=3: %v", c.env, err)
		}
	}
}

// TestMalformedSwitchesRefused: BRAIN_NO_AUTH, BRAIN_BUILTIN_WASM and
// BRAIN_NO_WORKSPACE take a boolean; any other value stops start-up naming
// the variable instead of being read as false.
func TestMalformedSwitchesRefused(t *testing.T) {
	for _, name := range []string{"BRAIN_NO_AUTH", "BRAIN_BUILTIN_WASM", "BRAIN_NO_WORKSPACE"} {
		for _, v := range []string{"yes", "on", "2", "tru"} {
			if _, err := serveConfig(map[string]string{name: v}); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: error %v, want one naming %s", name, v, err, name)
			}
		}
	}
	for _, c := range []struct {
		v    string
		want bool
	}{{"1", true}, {"true", true}, {"TRUE", true}, {"0", false}, {"false", false}, {"", false}} {
		cfg, err := serveConfig(map[string]string{"BRAIN_BUILTIN_WASM": c.v})
		if err != nil || cfg.Agentloops.BuiltinWasm != c.want {
			t.Errorf("BRAIN_BUILTIN_WASM=%q: %v, %v; want %v", c.v, cfg.Agentloops.BuiltinWasm, err, c.want)
		}
	}
}

// TestLogLevelErrorNamesVariable: a bad BRAIN_LOG_LEVEL stops start-up
// with an error naming the variable it came from.
func TestLogLevelErrorNamesVariable(t *testing.T) {
	t.Setenv("BRAIN_LOG_LEVEL", "loud")
	var stdout, stderr bytes.Buffer
	if code := serve(t.Context(), nil, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "BRAIN_LOG_LEVEL") {
		t.Errorf("BRAIN_LOG_LEVEL=loud: exit %d, stderr %q", code, stderr.String())
	}
}

// TestLogLevelOnlyNamedLevels: the log level is one of the four levels
// the usage names, in any case; a level with an offset ("warn+4", which
// would log errors only, "info-1", which logs neither info nor debug as
// asked) or any other word stops start-up with an error naming the
// variable and the levels it takes.
func TestLogLevelOnlyNamedLevels(t *testing.T) {
	for v, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "Warn": slog.LevelWarn, "error": slog.LevelError} {
		log, err := newLogger(io.Discard, v)
		if err != nil {
			t.Errorf("log level %q refused: %v", v, err)
			continue
		}
		if !log.Enabled(t.Context(), want) || log.Enabled(t.Context(), want-1) {
			t.Errorf("log level %q does not log from %v on", v, want)
		}
	}
	for _, v := range []string{"warn+4", "info-1", "DEBUG+2", "error-8", "", "loud", "4"} {
		_, err := newLogger(io.Discard, v)
		if err == nil || !strings.Contains(err.Error(), "BRAIN_LOG_LEVEL") || !strings.Contains(err.Error(), "want debug, info, warn or error") {
			t.Errorf("log level %q: %v, want an error naming BRAIN_LOG_LEVEL and the levels", v, err)
		}
	}
}

// TestNoAuthWithTokenRefused: --no-auth beside a token, from the flag or
// the environment, stops start-up instead of silently serving without
// the token the operator set (as the reference providers do).
func TestNoAuthWithTokenRefused(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"--no-auth", "--token", "t0ken"}},
		{map[string]string{"BRAIN_API_TOKEN": "t0ken"}, []string{"--no-auth"}},
		{map[string]string{"BRAIN_API_TOKEN": "t0ken", "BRAIN_NO_AUTH": "1"}, nil},
	} {
		_, err := serveConfig(c.env, c.args...)
		if err == nil || !strings.Contains(err.Error(), "contradicts") || strings.Contains(err.Error(), "t0ken") {
			t.Errorf("env %v args %v: error %v, want one saying --no-auth contradicts the token, without the token", c.env, c.args, err)
		}
	}
	if cfg, err := serveConfig(nil, "--no-auth"); err != nil || cfg.Token != "" || cfg.TokenFile != "" {
		t.Errorf("--no-auth alone: token %q file %q, %v; want no token", cfg.Token, cfg.TokenFile, err)
	}
}

// TestHelpOnlyAsAFlag: -h, -help and --help print the usage on stdout
// with status 0 where they stand as a flag; as the value of a flag they
// are that value (a token may be "-h"), and a malformed flag beside help
// is still an error on stderr with status 2.
func TestHelpOnlyAsAFlag(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := serve(t.Context(), []string{"--no-workspace", h}, &stdout, &stderr); code != 0 ||
			!strings.Contains(stdout.String(), "BRAIN_API_TOKEN") || stderr.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q", h, code, stdout.Len(), stderr.String())
		}
	}
	if code, stderr, served := serveOnce(t, "--no-workspace", "--token", "-h"); !served || code != 0 {
		t.Errorf("--token -h: served %v, exit %d, stderr %q; want a server whose token is -h", served, code, stderr)
	}
	var stdout, stderr bytes.Buffer
	if code := serve(t.Context(), []string{"--no-such-flag", "--help"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "no-such-flag") || stdout.Len() != 0 {
		t.Errorf("--no-such-flag --help: exit %d, stdout %d bytes, stderr %q", code, stdout.Len(), stderr.String())
	}
}
