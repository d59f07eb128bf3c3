package main

import (
	"strings"
	"testing"
)

// TestServeRefusesURLsNoRequestCanUse: a URL setting that no request can
// use is a refused setting, exit 2 naming the flag or variable before
// anything starts, never quoting a credential: a port no connection can
// be made to (0, or beyond 65535), white space, a model base URL or OTLP
// endpoint carrying credentials, a query or fragment where a path is
// appended. Before, such URLs were accepted and every model call,
// environment operation, callback or export failed, or start-up stopped
// as a failure to serve (exit 1) naming a Config field.
func TestServeRefusesURLsNoRequestCanUse(t *testing.T) {
	for _, flag := range []string{"openai-base-url", "anthropic-base-url", "environment-base-url", "public-url"} {
		for _, u := range []string{"http://127.0.0.1:99999", "http://127.0.0.1:0", "https://localhost:65536/v1"} {
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+flag, u)
			if served || code != 2 || !strings.Contains(stderr, "--"+flag) || !strings.Contains(stderr, "port") {
				t.Errorf("--%s %s: served %v, exit %d, stderr %q; want exit 2 naming --%s and the port", flag, u, served, code, stderr, flag)
			}
		}
	}
	// White space in a URL (a line end or blank read with it) becomes
	// part of every request's path.
	for _, flag := range []string{"openai-base-url", "anthropic-base-url", "environment-base-url"} {
		for _, u := range []string{"http://127.0.0.1:8080/v1 ", "http://127.0.0.1:8080/v1\n", "http://127.0.0.1:8080/my models/v1"} {
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+flag, u)
			if served || code != 2 || !strings.Contains(stderr, "--"+flag) || !strings.Contains(stderr, "white space") {
				t.Errorf("--%s %q: served %v, exit %d, stderr %q; want exit 2 naming --%s and the white space", flag, u, served, code, stderr, flag)
			}
		}
	}
	for _, flag := range []string{"openai-base-url", "anthropic-base-url"} {
		for _, u := range []string{"http://user:sekrit@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1?key=sekrit", "http://127.0.0.1:8080/v1#sekrit", "http://127.0.0.1:8080/v1?"} {
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+flag, u)
			if served || code != 2 || !strings.Contains(stderr, "--"+flag) || strings.Contains(stderr, "sekrit") {
				t.Errorf("--%s with a credential, query or fragment: served %v, exit %d, stderr %q; want exit 2 naming --%s", flag, served, code, stderr, flag)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "http://127.0.0.1:99999")
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace")
			if served || code != 2 || !strings.Contains(stderr, name) || !strings.Contains(stderr, "port") {
				t.Errorf("%s with port 99999: served %v, exit %d, stderr %q; want exit 2 naming %s", name, served, code, stderr, name)
			}
			t.Setenv(name, "http://user:sekrit@127.0.0.1:4318")
			code, stderr, served = serveOnce(t, "--no-auth", "--no-workspace")
			if served || code != 2 || !strings.Contains(stderr, name) || strings.Contains(stderr, "sekrit") {
				t.Errorf("%s with credentials: served %v, exit %d, stderr %q; want exit 2 naming %s", name, served, code, stderr, name)
			}
		})
	}
	// The general endpoint gets each signal's path appended: after a
	// query or a fragment, that path was lost and every export went to
	// another one.
	t.Run("OTEL_EXPORTER_OTLP_ENDPOINT query", func(t *testing.T) {
		for _, u := range []string{"http://127.0.0.1:4318?tenant=a", "http://127.0.0.1:4318/#a"} {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", u)
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace")
			if served || code != 2 || !strings.Contains(stderr, "OTEL_EXPORTER_OTLP_ENDPOINT") || !strings.Contains(stderr, "query") {
				t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%s: served %v, exit %d, stderr %q; want exit 2 naming it", u, served, code, stderr)
			}
		}
	})
	dir := t.TempDir()
	routes := writeFile(t, dir, "routes.json", `{"notes":{"endpoint":"http://127.0.0.1:99999","api_key":"sekrit"}}`)
	code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--environment-routes-file", routes)
	if served || code != 2 || !strings.Contains(stderr, "--environment-routes-file") || !strings.Contains(stderr, "port") || strings.Contains(stderr, "sekrit") {
		t.Errorf("a route with port 99999: served %v, exit %d, stderr %q; want exit 2 naming --environment-routes-file", served, code, stderr)
	}
	providers := writeFile(t, dir, "providers.json", `{"providers":[{"name":"local","dialect":"openai_chat_completions","base_url":"http://127.0.0.1:99999/v1","models":[{"id":"m"}]}]}`)
	code, stderr, served = serveOnce(t, "--no-auth", "--no-workspace", "--providers-file", providers)
	if served || code != 2 || !strings.Contains(stderr, "--providers-file") || !strings.Contains(stderr, "port") {
		t.Errorf("a provider with port 99999: served %v, exit %d, stderr %q; want exit 2 naming --providers-file", served, code, stderr)
	}

	// Usable URLs still serve: any port from 1 to 65535, none (the
	// scheme's), IPv6 hosts.
	for _, c := range [][]string{
		{"--openai-base-url", "http://127.0.0.1:65535/v1"},
		{"--anthropic-base-url", "https://api.example/v1"},
		{"--environment-base-url", "http://[::1]:1"},
		{"--public-url", "http://127.0.0.1:8080"},
	} {
		if code, stderr, served := serveOnce(t, append([]string{"--no-auth", "--no-workspace"}, c...)...); !served || code != 0 {
			t.Errorf("%v: served %v, exit %d, stderr %q", c, served, code, stderr)
		}
	}
}

// TestServeRefusesPortNoListenerCanUse: a listen address whose port is
// beyond 65535 or names no service is a malformed setting: exit 2 naming
// the flag and its variable, as a missing port is, not a failure to serve
// (exit 1) quoting only the listener's error.
func TestServeRefusesPortNoListenerCanUse(t *testing.T) {
	for _, c := range []struct{ flag, env, addr string }{
		{"--listen", "BRAIN_LISTEN", "127.0.0.1:99999"},
		{"--listen", "BRAIN_LISTEN", "127.0.0.1:no-such-service"},
		{"--metrics-listen", "BRAIN_METRICS_LISTEN", "127.0.0.1:65536"},
	} {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", c.flag, c.addr)
		if served || code != 2 || !strings.Contains(stderr, c.flag) || !strings.Contains(stderr, c.env) {
			t.Errorf("%s %s: served %v, exit %d, stderr %q; want exit 2 naming %s (%s)", c.flag, c.addr, served, code, stderr, c.flag, c.env)
		}
	}
	if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--metrics-listen", "127.0.0.1:0"); !served || code != 0 {
		t.Errorf("--metrics-listen 127.0.0.1:0: served %v, exit %d, stderr %q", served, code, stderr)
	}
}

// TestServeRefusesDatabaseURLNoBackendCanParse: a database URL its
// backend cannot parse (a port beyond 65535, a malformed parameter) is a
// refused setting, exit 2 naming the flag, like one whose scheme no
// backend serves, not a failure to serve (exit 1); the password is never
// quoted.
func TestServeRefusesDatabaseURLNoBackendCanParse(t *testing.T) {
	keyFile := writeFile(t, t.TempDir(), "sealing.key", strings.Repeat("ab", 32))
	for _, u := range []string{
		"postgres://brain:sekrit@127.0.0.1:99999/brain",
		"postgres://brain:sekrit@127.0.0.1:5432/brain?connect_timeout=soon",
		"postgresql://brain@127.0.0.1:5432/brain?password=sekrit&sslmode=sometimes",
	} {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--database-url", u, "--sealing-key-file", keyFile)
		if served || code != 2 || !strings.Contains(stderr, "--database-url (BRAIN_DATABASE_URL)") || strings.Contains(stderr, "sekrit") {
			t.Errorf("a database URL no backend can parse: served %v, exit %d, stderr %q; want exit 2 naming --database-url", served, code, stderr)
		}
	}
}
