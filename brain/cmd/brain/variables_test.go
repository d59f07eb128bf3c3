package main

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestServeRefusesMisspeltVariable: a BRAIN_* variable that "brain serve"
// does not read but that is one slip away from one it reads (a letter
// left out or doubled, an underscore missing, SECONDS for SECS, lower
// case) was ignored, and Brain ran with the default the operator meant to
// change. Start-up now stops (exit 2) before the data directory is
// created, naming the variable and the one it was meant as, and never
// quoting the value, which may be a credential.
func TestServeRefusesMisspeltVariable(t *testing.T) {
	for _, c := range []struct{ name, meant string }{
		{"BRAIN_MAX_TURN_SEC", "BRAIN_MAX_TURN_SECS"},
		{"BRAIN_MAX_TURN_SECONDS", "BRAIN_MAX_TURN_SECS"},
		{"BRAIN_DATADIR", "BRAIN_DATA_DIR"},
		{"BRAIN_API_TOKN", "BRAIN_API_TOKEN"},
		{"BRAIN_MAX_REQEUST_BYTES", "BRAIN_MAX_REQUEST_BYTES"},
		{"brain_listen", "BRAIN_LISTEN"},
	} {
		dataDir := t.TempDir() + "/data"
		res := runCommand(t, []string{c.name + "=1234567sekrit"}, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--no-auth", "--no-workspace")
		if res.served || res.code != 2 || !strings.Contains(res.stderr, c.name+" ") || !strings.Contains(res.stderr, c.meant) ||
			strings.Contains(res.stderr, "sekrit") {
			t.Errorf("%s set: served %v, exit %d, stderr %q; want exit 2 naming %s and %s, not the value", c.name, res.served, res.code, res.stderr, c.name, c.meant)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s set: the data directory was created (%v)", c.name, err)
		}
	}
	// The variables of the companions of "brain serve" (the token the
	// banner tells to export, a provider's token, the example clients'
	// settings) and the reference's variables this server documents as
	// not read do not stop it.
	res := runCommand(t, []string{"BRAIN_TOKEN=t", "BRAIN_URL=http://127.0.0.1:8080", "BRAIN_ENV_TOKEN=t", "BRAIN_MODEL_API_KEY=k", "BRAIN_MAX_FUEL=10", "BRAIN_ENV_NETWORK_ALLOW=x"},
		"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "--no-auth", "--no-workspace")
	if !res.served || res.code != 0 {
		t.Errorf("other BRAIN_* variables: served %v, exit %d, stderr %q", res.served, res.code, res.stderr)
	}
}

// TestServeUnexpectedArgumentShowsUsage: "brain serve" takes no operands;
// one (a subcommand it does not have, or the value of a mistyped flag)
// exits 2 with the usage, as an unknown flag does.
func TestServeUnexpectedArgumentShowsUsage(t *testing.T) {
	res := runCommand(t, nil, "serve", "--no-auth", "--no-workspace", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()+"/data", "status")
	if res.served || res.code != 2 || !strings.Contains(res.stderr, `unexpected argument "status"`) || !strings.Contains(res.stderr, "usage: brain serve") {
		t.Errorf("serve status: served %v, exit %d, stderr %q; want exit 2 with the usage", res.served, res.code, res.stderr)
	}
}
