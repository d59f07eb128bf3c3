package main

import (
	"bytes"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLoopbackSpellings: --no-auth serves on a loopback address
// however it is written (::1 with its zone, IPv4-mapped 127.0.0.1, the
// name localhost in capitals), and so does the unauthenticated metrics
// address; an address that is not loopback, in the same spellings, is
// still refused (exit 2) before anything starts.
func TestServeLoopbackSpellings(t *testing.T) {
	loopbacks := []string{"[::ffff:127.0.0.1]:0", "LOCALHOST:0"}
	if ln, err := net.Listen("tcp", "[::1%lo]:0"); err == nil {
		ln.Close()
		loopbacks = append(loopbacks, "[::1%lo]:0")
	} else {
		t.Logf("no IPv6 loopback with a zone here (%v): not tried", err)
	}
	for _, addr := range loopbacks {
		if code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--listen", addr); !served || code != 0 {
			t.Errorf("--no-auth --listen %s: served %v, exit %d, stderr %q; want it served", addr, served, code, stderr)
		}
		if code, stderr, served := serveOnce(t, "--no-workspace", "--metrics-listen", addr); !served || code != 0 {
			t.Errorf("--metrics-listen %s: served %v, exit %d, stderr %q; want it served", addr, served, code, stderr)
		}
	}
	for _, addr := range []string{"[fe80::1%lo]:0", "[::ffff:10.0.0.1]:0", "[::]:0", "0.0.0.0:0", ":0", "localhost.example:0"} {
		code, stderr, served := serveOnce(t, "--no-auth", "--no-workspace", "--listen", addr)
		if served || code != 2 || !strings.Contains(stderr, "non-loopback") {
			t.Errorf("--no-auth --listen %s: served %v, exit %d, stderr %q; want exit 2 refusing a non-loopback address", addr, served, code, stderr)
		}
		code, stderr, served = serveOnce(t, "--no-workspace", "--metrics-listen", addr)
		if served || code != 2 || !strings.Contains(stderr, "--metrics-listen") {
			t.Errorf("--metrics-listen %s: served %v, exit %d, stderr %q; want exit 2", addr, served, code, stderr)
		}
	}
}

// TestServeNonLoopbackRefusalNamesSetting: an address refused for not
// being loopback is named with its flag and its variable, whichever the
// operator wrote it in.
func TestServeNonLoopbackRefusalNamesSetting(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"BRAIN_LISTEN", "--listen 0.0.0.0:0 (BRAIN_LISTEN)"},
		{"BRAIN_METRICS_LISTEN", "--metrics-listen 0.0.0.0:0 (BRAIN_METRICS_LISTEN)"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, "0.0.0.0:0")
			var stdout, stderr bytes.Buffer
			dataDir := filepath.Join(t.TempDir(), "data")
			code := serve(t.Context(), []string{"--data-dir", dataDir, "--no-auth", "--no-workspace"}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("%s=0.0.0.0:0: exit %d, stderr %q; want exit 2 naming %s", c.env, code, stderr.String(), c.want)
			}
		})
	}
}
