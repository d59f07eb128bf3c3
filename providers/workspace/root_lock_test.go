package workspace

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A root serves one provider at a time: a second one started on it while
// the first runs would load the same bindings and act on the same
// workspaces and state files behind the first one's back (a teardown by
// one brought back by the other's next save, the temporary file of a
// save in progress removed as a leftover). It is refused, with the root
// named, and the running provider is left alone. Once that provider is
// killed the root is free again.
func TestRootServesOneProviderAtATime(t *testing.T) {
	root := t.TempDir()
	child, url := startProviderProcess(t, root)
	c := envtest.NewCommands("s1", "workspace")
	c.Brain = envtest.NewBrain(t)
	post := func(cmd envapi.Command) envapi.Receipt { t.Helper(); return postTo(t, url, cmd) }
	accepted(t, post(c.Setup(nil)))
	ok(t, post(c.Execute(tool("write"), mustJSON(t, map[string]string{"path": "f", "content": "kept"}), nil)), nil)

	_, err := New(Options{Root: root})
	if !errors.Is(err, ErrRootInUse) || !strings.Contains(err.Error(), root) {
		t.Errorf("New on the root of a running provider: %v, want %v naming %s", err, ErrRootInUse, root)
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a provider that started would stop at once
	if code := Command(ctx, []string{"--listen", "127.0.0.1:0", "--root", root, "--no-auth"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "in use") {
		t.Errorf("brain env workspace on the root of a running provider: exit %d, stderr %q", code, stderr.String())
	}
	var rd toolset.ReadOutput
	ok(t, post(c.Execute(tool("read"), mustJSON(t, map[string]string{"path": "f"}), nil)), &rd)
	if rd.Content != "kept" {
		t.Errorf("read through the running provider: %+v", rd)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	f := newFixture(t, Options{Root: root})
	ok(t, f.exec(c, "read", map[string]string{"path": "f"}, nil), &rd)
	if rd.Content != "kept" {
		t.Errorf("read after the provider was killed and another started: %+v", rd)
	}
}
