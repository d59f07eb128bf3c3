package loophost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// Every file a Tool opens in a granted directory is a file descriptor of
// the server's process until the Tool closes it or its instance is
// closed. A Tool that opens files without closing them is refused past
// MaxOpenFiles with "too many open files" (EMFILE), instead of taking the
// descriptors every other session, connection and journal of the server
// needs, and can open files again once it has closed some.
func TestToolOpenFilesAreBounded(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, id := toolHost(t, loophost.Options{FilesystemAllow: []string{ws, "scratch"}})
	d, err := h.ParseToolImplementation(impl(id, `{"filesystem":{"workspace":{"path":"`+ws+`","access":"read"},"scratch":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := loophost.ToolCall{Grants: d.Grants}
	got := okValue(t, runOp(t, h, id, c, `{"op":"hold","path":"/workspace/f","bytes":1000000}`))
	// The two preopened directories count as well once the guest's
	// runtime has opened them.
	var n int
	var rest string
	if _, err := fmt.Sscanf(got, `"opened %d: open /workspace/f: %s`, &n, &rest); err != nil ||
		n < loophost.MaxOpenFiles-2 || n >= loophost.MaxOpenFiles ||
		!strings.HasSuffix(strings.ToLower(got), `too many open files; again: \u003cnil\u003e"`) {
		t.Errorf("holding files: %s, want about %d opened, then too many open files, then one opened again", got, loophost.MaxOpenFiles)
	}
	if got := okValue(t, runOp(t, h, id, c, `{"op":"hold","path":"/workspace/f","bytes":100}`)); got != `"opened 100: \u003cnil\u003e; again: \u003cnil\u003e"` {
		t.Errorf("holding 100 files: %s", got)
	}
}
