package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A read cut by its limit inside a multi-byte character ends before that
// character, so that text stays text: the caller continues from the offset
// plus the bytes returned. Content that is not text stays base64.
func TestReadCutKeepsTextAsText(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 9})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	text := "héllo wörld ✓ done"
	ok(t, f.exec(c, "write", map[string]any{"path": "t.txt", "content": text}, nil), nil)
	var got string
	for offset := 0; offset < len(text); {
		var rd toolset.ReadOutput
		ok(t, f.exec(c, "read", map[string]any{"path": "t.txt", "offset": offset, "limit": 5}, nil), &rd)
		if rd.Encoding != toolset.EncodingUTF8 || rd.Content == "" {
			t.Fatalf("read at %d: %+v, want text", offset, rd)
		}
		if rd.Truncated != (offset+len(rd.Content) < len(text)) {
			t.Errorf("read at %d: %+v, truncated wrong", offset, rd)
		}
		got += rd.Content
		offset += len(rd.Content)
	}
	if got != text {
		t.Errorf("reassembled %q, want %q", got, text)
	}
	// The output limit cuts the same way.
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]any{"path": "t.txt"}, nil), &rd)
	if rd.Content != "héllo w" || rd.Encoding != toolset.EncodingUTF8 || !rd.Truncated {
		t.Errorf("read at the output limit: %+v", rd)
	}
	// Binary content, and a limit too small for one character, stay base64.
	ok(t, f.exec(c, "write", map[string]any{"path": "b", "content": "/wD+/wD+", "encoding": "base64"}, nil), nil)
	ok(t, f.exec(c, "read", map[string]any{"path": "b", "limit": 4}, nil), &rd)
	if rd.Content != "/wD+/w==" || rd.Encoding != toolset.EncodingBase64 || !rd.Truncated {
		t.Errorf("binary read %+v", rd)
	}
	ok(t, f.exec(c, "read", map[string]any{"path": "t.txt", "offset": 14, "limit": 1}, nil), &rd)
	if rd.Encoding != toolset.EncodingBase64 || rd.Content != "4g==" || !rd.Truncated {
		t.Errorf("one byte of a character: %+v", rd)
	}
}

// A write to a directory says so; it does not claim the directory is
// neither a file nor a directory.
func TestWriteToDirectorySaysSo(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]any{"path": "d/f", "content": "x"}, nil), nil)
	r := f.exec(c, "write", map[string]any{"path": "d", "content": "x"}, nil)
	fails(t, r, envapi.CodeInvalidInput)
	if r.Message != "d is a directory" {
		t.Errorf("write d: %q", r.Message)
	}
	// A path ending in a slash names a directory by its form alone.
	r = f.exec(c, "write", map[string]any{"path": "d/", "content": "x"}, nil)
	fails(t, r, envapi.CodeInvalidInput)
	if !strings.Contains(r.Message, `"d/" names a directory`) {
		t.Errorf("write d/: %q", r.Message)
	}
}
