package main

import (
	"strings"
	"testing"
)

// hostlessURLs name no host a request can reach: only a port (dialled on
// this machine under no name), or a host holding a Unicode format
// character no reader sees (a zero width space, a soft hyphen, a right to
// left override), as written or percent-encoded.
var hostlessURLs = []string{
	"http://:8000/v1",
	"https://api.ex\u200bample/v1",
	"https://api.ex\u00adample/v1",
	"https://\u202eelpmaxe.ipa/v1",
	"https://api.ex%E2%80%8Bample/v1",
}

// TestServeRefusesURLsNamingNoHost: a URL setting that names no host, or
// a host with an invisible format character in it, is a refused setting:
// exit 2 naming the flag or variable and the host, before anything
// starts. Before, "brain serve" started with such a model base URL,
// public URL or OTLP endpoint (and with such a model base URL in the
// providers file), and every model call, callback or export went to this
// machine or to a name nobody meant.
func TestServeRefusesURLsNamingNoHost(t *testing.T) {
	for _, flag := range []string{"openai-base-url", "anthropic-base-url", "environment-base-url", "public-url"} {
		for _, u := range hostlessURLs {
			code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--"+flag, u)
			if served || code != 2 || !strings.Contains(stderr, "--"+flag) || !strings.Contains(stderr, "host") {
				t.Errorf("--%s %q: served %v, exit %d, stderr %q; want exit 2 naming --%s and the host", flag, u, served, code, stderr, flag)
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"} {
		t.Run(name, func(t *testing.T) {
			for _, u := range []string{"http://:4318", "http://collec\u200btor:4318", "http://collec%E2%80%8Btor:4318"} {
				t.Setenv(name, u)
				code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace")
				if served || code != 2 || !strings.Contains(stderr, name) || !strings.Contains(stderr, "host") {
					t.Errorf("%s=%q: served %v, exit %d, stderr %q; want exit 2 naming %s and the host", name, u, served, code, stderr, name)
				}
			}
		})
	}
	dir := t.TempDir()
	for i, u := range hostlessURLs {
		providers := writeFile(t, dir, "providers.json",
			`{"providers":[{"name":"local","dialect":"openai_chat_completions","base_url":"`+u+`","models":[{"id":"m"}]}]}`)
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--providers-file", providers)
		if served || code != 2 || !strings.Contains(stderr, "--providers-file") || !strings.Contains(stderr, "host") {
			t.Errorf("a provider's base_url %d: served %v, exit %d, stderr %q; want exit 2 naming --providers-file and the host", i, served, code, stderr)
		}
		routes := writeFile(t, dir, "routes.json", `{"notes":{"endpoint":"`+strings.Replace(u, "/v1", "", 1)+`"}}`)
		code, stderr, served = serveOnce(t, "--no-auth", "--no-workspace", "--environment-routes-file", routes)
		if served || code != 2 || !strings.Contains(stderr, "--environment-routes-file") || !strings.Contains(stderr, "host") {
			t.Errorf("a route's endpoint %d: served %v, exit %d, stderr %q; want exit 2 naming --environment-routes-file and the host", i, served, code, stderr)
		}
	}
	// Names beyond ASCII and IPv6 addresses are hosts.
	for _, c := range [][]string{
		{"--openai-base-url", "https://bücher.example/v1"},
		{"--anthropic-base-url", "http://[::1]:8000/v1"},
	} {
		if code, stderr, served := serveOnce(t, append([]string{"--no-auth", "--no-workspace"}, c...)...); !served || code != 0 {
			t.Errorf("%v: served %v, exit %d, stderr %q", c, served, code, stderr)
		}
	}
}
