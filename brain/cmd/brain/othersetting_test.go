package main

import (
	"strings"
	"testing"
)

// TestServeRefusalsNameOtherSettingsByFlag: a refusal that depends on
// another setting (the sealing key file read only with a database URL,
// and required with one) names that setting as the operator can write
// it, by its flag and variable, not as a Go field of brain.Config that no
// command line or environment sets.
func TestServeRefusalsNameOtherSettingsByFlag(t *testing.T) {
	keyFile := writeFile(t, t.TempDir(), "sealing.key", strings.Repeat("ab", 32))
	for _, args := range [][]string{
		{"--sealing-key-file", keyFile},
		{"--database-url", "postgres://brain:sekrit@127.0.0.1:1/brain"},
	} {
		code, stderr, served := serveOnce(t, append(args, "--no-auth", "--no-workspace")...)
		if served || code != 2 || !strings.Contains(stderr, "--sealing-key-file (BRAIN_SEALING_KEY_FILE)") ||
			!strings.Contains(stderr, "with --database-url (BRAIN_DATABASE_URL)") || strings.Contains(stderr, "Storage.") || strings.Contains(stderr, "sekrit") {
			t.Errorf("%v: served %v, exit %d, stderr %q; want exit 2 naming --database-url (BRAIN_DATABASE_URL)", args, served, code, stderr)
		}
	}
}
