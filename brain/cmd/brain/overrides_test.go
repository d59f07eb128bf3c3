package main

import (
	"strings"
	"testing"
)

// TestFlagOverridesMalformedVariable: a flag given on the command line
// wins over its variable, so a malformed value of that variable is not
// used and does not stop start-up; the same variable without its flag
// still does, naming it.
func TestFlagOverridesMalformedVariable(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		env, value string
		args       []string
	}{
		{"BRAIN_MAX_HOSTS", "lots", []string{"--max-hosts", "5"}},
		{"BRAIN_MAX_TURN_SECS", "-1", []string{"--max-turn-secs", "60"}},
		{"BRAIN_BUILTIN_WASM", "maybe", []string{"--builtin-wasm=false"}},
		{"BRAIN_NO_WORKSPACE", "yes", []string{"--no-workspace=true"}},
		{"BRAIN_ENV_SECRET_ALLOW", "api=relative/dir", []string{"--env-secret-allow", "api=" + dir}},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			args := append([]string{"--no-auth", "--no-workspace"}, c.args...)
			if code, stderr, served := serveOnce(t, args...); !served || code != 0 {
				t.Errorf("%s=%q under %v: served %v, exit %d, stderr %q; want the flag to win", c.env, c.value, c.args, served, code, stderr)
			}
			if code, stderr, served := serveOnce(t, "--no-auth"); served || code != 2 || !strings.Contains(stderr, c.env) {
				t.Errorf("%s=%q alone: served %v, exit %d, stderr %q; want exit 2 naming %s", c.env, c.value, served, code, stderr, c.env)
			}
		})
	}
	cfg, err := serveConfig(map[string]string{"BRAIN_MAX_HOSTS": "lots", "BRAIN_MAX_HOST_COMMANDS": "7"}, "--max-hosts", "5")
	if err != nil || cfg.Hosts.MaxHosts != 5 || cfg.Hosts.MaxCommands != 7 {
		t.Errorf("--max-hosts 5 over BRAIN_MAX_HOSTS=lots: hosts %d, commands %d, %v; want 5 and 7", cfg.Hosts.MaxHosts, cfg.Hosts.MaxCommands, err)
	}
	// A malformed variable of another flag is still refused.
	if _, err := serveConfig(map[string]string{"BRAIN_MAX_HOSTS": "lots"}, "--max-host-commands", "5"); err == nil || !strings.Contains(err.Error(), "BRAIN_MAX_HOSTS") {
		t.Errorf("BRAIN_MAX_HOSTS=lots beside --max-host-commands: %v, want an error naming BRAIN_MAX_HOSTS", err)
	}
}
