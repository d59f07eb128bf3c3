package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesAllowListsNamingNoDirectory: a Wasm Tools' allow list
// entry naming a directory that is not there (a mistyped path) or a file
// is a refused setting: exit 2 naming the flag and variable and saying
// what is wrong with the entry, before the data directory is created.
// Before, it stopped start-up as a failure to serve (exit 1) naming
// Config.Agentloops, which the operator never wrote, and a secret's
// missing directory was said not to be absolute.
func TestServeRefusesAllowListsNamingNoDirectory(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir")
	file := writeFile(t, dir, "plain-file", "x")
	for _, c := range []struct {
		args        []string
		name, wrong string
	}{
		{[]string{"--env-filesystem-allow", "scratch," + missing}, "--env-filesystem-allow (BRAIN_ENV_FILESYSTEM_ALLOW)", "no such file or directory"},
		{[]string{"--env-secret-allow", "api=" + missing}, "--env-secret-allow (BRAIN_ENV_SECRET_ALLOW)", "no such file or directory"},
		{[]string{"--env-secret-allow", "api=" + file}, "--env-secret-allow (BRAIN_ENV_SECRET_ALLOW)", "is not a directory"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		code, stderr, served := serveOnce(t, append([]string{"--no-auth", "--no-workspace", "--data-dir", data}, c.args...)...)
		if served || code != 2 || !strings.Contains(stderr, c.name) || !strings.Contains(stderr, c.wrong) || strings.Contains(stderr, "absolute") {
			t.Errorf("%v: served %v, exit %d, stderr %q; want exit 2 naming %s and saying %q", c.args, served, code, stderr, c.name, c.wrong)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%v: the data directory was created (%v)", c.args, err)
		}
	}
}
