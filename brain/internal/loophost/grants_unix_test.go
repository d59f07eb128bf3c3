//go:build unix

package loophost_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A named pipe in a granted directory is refused (EPERM) when the Tool
// opens it, for reading or for writing: opening one waits for the other
// end in the host, where neither the Tool's deadline nor a cancel reaches,
// so the invocation and its instance slot would be held for as long as no
// peer comes. Regular files and directories beside it open as before.
func TestToolSpecialFilesAreRefused(t *testing.T) {
	ws := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "plain.txt"), []byte("plain"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, id := toolHost(t, loophost.Options{FilesystemAllow: []string{ws}})
	d, err := h.ParseToolImplementation(impl(id, `{"filesystem":{"workspace":{"path":"`+ws+`","access":"write"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(in string) envapi.Receipt {
		t.Helper()
		done := make(chan envapi.Receipt, 1)
		go func() {
			done <- h.RunTool(context.Background(), loophost.ToolCall{ID: id, Grants: d.Grants,
				Deadline: time.Now().Add(time.Second), Input: json.RawMessage(in)})
		}()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			// Let the blocked open through, so that the test ends.
			for _, flag := range []int{os.O_RDONLY | syscall.O_NONBLOCK, os.O_WRONLY | syscall.O_NONBLOCK} {
				if f, err := os.OpenFile(filepath.Join(ws, "pipe"), flag, 0); err == nil {
					defer f.Close()
				}
			}
			r := <-done
			t.Fatalf("%s held the invocation past its deadline (%+v)", in, r)
			return r
		}
	}
	for in, code := range map[string]string{
		`{"op":"read","path":"/workspace/pipe"}`:                "read_failed",
		`{"op":"write","path":"/workspace/pipe","content":"x"}`: "write_failed",
	} {
		o := outcomeOf(t, run(in))
		if o.Status != envapi.StatusError || o.Error.Code != code || !strings.Contains(o.Error.Message, "not permitted") {
			t.Errorf("%s: outcome %+v %+v, want %s (not permitted)", in, o, o.Error, code)
		}
	}
	if h.Instances() != 0 {
		t.Fatalf("%d instances left", h.Instances())
	}
	if v := okValue(t, run(`{"op":"read","path":"/workspace/plain.txt"}`)); v != `"plain"` {
		t.Fatalf("plain file read %s", v)
	}
	if v := okValue(t, run(`{"op":"list","path":"/workspace"}`)); v != `"pipe,plain.txt"` {
		t.Fatalf("listing %s", v)
	}
}
