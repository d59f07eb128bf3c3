package workspace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandRefusesCommandLineByFlag: a command line the provider
// cannot run exits 2, as the other commands do, with a message that
// begins with the command's name and names the flag (or the variable) to
// change, before the root is created. A port beyond 65535 is such a
// command line, not a failure to listen.
func TestCommandRefusesCommandLineByFlag(t *testing.T) {
	t.Setenv(TokenEnv, "")
	for _, c := range []struct {
		args  []string
		names []string
	}{
		{[]string{"--listen", "127.0.0.1:99999", "--no-auth"}, []string{`--listen "127.0.0.1:99999"`, "65535"}},
		{[]string{"--listen", "127.0.0.1", "--no-auth"}, []string{`--listen "127.0.0.1"`}},
		{[]string{"--listen", "127.0.0.1:0"}, []string{"--token", TokenEnv, "--no-auth"}},
		{[]string{"--listen", "127.0.0.1:0", "--token", " "}, []string{"--token", TokenEnv}},
		{[]string{"--listen", "127.0.0.1:0", "--no-auth", "--release", "burn"}, []string{`--release "burn"`, ReleaseKeep, ReleaseWipe}},
		{[]string{"--listen", "127.0.0.1:0", "--no-auth", "--max-files", "0"}, []string{"--max-files 0"}},
		{[]string{"--listen", "127.0.0.1:0", "--no-auth", "--allow", "/usr/bin/git"}, []string{"--allow"}},
		{[]string{"--listen", "127.0.0.1:0", "--no-auth", "stray"}, []string{"unexpected arguments: stray"}},
	} {
		root := filepath.Join(t.TempDir(), "root")
		var out, errb bytes.Buffer
		code := Command(t.Context(), append(c.args, "--root", root), &out, &errb)
		if code != 2 || !strings.HasPrefix(errb.String(), "brain env workspace: ") || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and stderr beginning with the command's name", c.args, code, out.String(), errb.String())
		}
		for _, n := range c.names {
			if !strings.Contains(errb.String(), n) {
				t.Errorf("%q: stderr %q does not name %s", c.args, errb.String(), n)
			}
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q: the root was created (%v)", c.args, err)
		}
	}
	var out, errb bytes.Buffer
	if code := Command(t.Context(), []string{"--listen", "127.0.0.1:0", "--no-auth"}, &out, &errb); code != 2 ||
		!strings.HasPrefix(errb.String(), "brain env workspace: --root") {
		t.Errorf("no --root: exit %d, stderr %q", code, errb.String())
	}
}
