package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A FIFO (with or without a peer) or a link to one is refused at once by
// every file tool, and the binding tears down afterwards as if nothing
// happened.
func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("mkfifo p q && ln -s p link && mkdir d && mkfifo d/r"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("mkfifo: %+v", out)
	}
	// The test holds q open so that a non-blocking open for writing
	// succeeds and only the kind of file can refuse it.
	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v", dirs)
	}
	peer, err := os.OpenFile(filepath.Join(f.root, "workspaces", dirs[0], "q"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	deadline := int64(20_000)
	cases := []struct {
		tool  string
		input map[string]any
	}{
		{"read", map[string]any{"path": "p"}},
		{"read", map[string]any{"path": "link"}},
		{"read", map[string]any{"path": "q"}},
		{"read", map[string]any{"path": "d/r"}},
		{"write", map[string]any{"path": "p", "content": "x"}},
		{"write", map[string]any{"path": "link", "content": "x"}},
		{"write", map[string]any{"path": "q", "content": "x"}},
		{"write", map[string]any{"path": "q", "content": "x", "append": true}},
		{"edit", map[string]any{"path": "p", "old": "a", "new": "b"}},
		{"edit", map[string]any{"path": "q", "old": "a", "new": "b"}},
		{"list", map[string]any{"path": "p"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+fmt.Sprint(tc.input["path"]), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			r := f.postCtx(ctx, c.Execute(tool(tc.tool), mustJSON(t, tc.input), &deadline))
			fails(t, r, envapi.CodeInvalidInput)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %v", d)
			}
		})
	}
	// The FIFO's neighbours still work, and nothing is left running: the
	// binding tears down and reset is not busy.
	ok(t, f.exec(c, "write", map[string]any{"path": "d/f", "content": "ok"}, nil), nil)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"path": "d"}, nil), &list)
	if got := fmt.Sprint(list.Entries); got != "[{d/f file 2} {d/r other 0}]" {
		t.Errorf("list %s", got)
	}
	ok(t, f.post(c.Call("reset", nil)), nil)
	accepted(t, f.post(c.Teardown()))
}
