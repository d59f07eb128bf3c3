package docker

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// bigFile makes a sparse file of size bytes in dir holding mark at offset
// at, and answers its path inside the workspace.
func bigFile(t *testing.T, dir string, size, at int64, mark string) string {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", size, err)
	}
	if _, err := f.WriteAt([]byte(mark), at); err != nil {
		t.Fatal(err)
	}
	return workspaceDir + "/big"
}

// Offsets and sizes of 4 GiB and more are read and told as they are: the
// bytes at the offset, and the file's whole size (which the edit tool
// compares with its limit, so that it never writes back part of a file).
func TestReadScriptBeyond4GiB(t *testing.T) {
	dir := t.TempDir()
	const size, at = 5<<30 + 10, 4<<30 + 3
	p := bigFile(t, dir, size, at, "HELLO")
	for _, tc := range []struct {
		offset int64
		want   string
	}{{at, "HELLO"}, {at + 2, "LLO\x00\x00"}, {0, "\x00\x00\x00\x00\x00"}, {size - 2, "\x00\x00"}} {
		out, errOut, code := runScript(t, dir, readScript, nil, p, strconv.FormatInt(tc.offset, 10), "5")
		if code != 0 || out != tc.want || strings.TrimSpace(errOut) != strconv.FormatInt(size, 10) {
			t.Errorf("read 5 bytes at %d: exit %d, stdout %q, stderr %q; want %q and the size %d", tc.offset, code, out, errOut, tc.want, int64(size))
		}
	}
}

// A listing gives a file of 4 GiB and more its size.
func TestListScriptBeyond4GiB(t *testing.T) {
	dir := t.TempDir()
	const size = 4<<30 + 7
	bigFile(t, dir, size, 0, "x")
	out, errOut, code := runScript(t, dir, listScript, nil, workspaceDir, "0")
	want := "file\x00" + strconv.FormatInt(size, 10) + "\x00big\x00"
	if code != 0 || out != want {
		t.Errorf("list: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
}

// An append that fails part-way because the disk is full leaves the file
// as it was, and one that would have created the file leaves none.
func TestAppendScriptOnFullDiskKeepsOldContent(t *testing.T) {
	dir := fullfs.Mount(t, 1<<20)
	old := bytes.Repeat([]byte("a"), 600<<10)
	if _, errOut, code := runScript(t, dir, writeScript, old, "/workspace/f", "0"); code != 0 {
		t.Fatalf("first write: exit %d: %s", code, errOut)
	}
	_, errOut, code := runScript(t, dir, writeScript, bytes.Repeat([]byte("b"), 600<<10), "/workspace/f", "1")
	if code == 0 {
		t.Fatal("an append beyond the disk's space succeeded")
	}
	if !strings.Contains(errOut, "No space left") {
		t.Errorf("stderr %q does not say the disk is full", errOut)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("after the failed append f holds %d bytes, %v; want its old %d", len(got), err, len(old))
	}
	if _, _, code := runScript(t, dir, writeScript, bytes.Repeat([]byte("c"), 600<<10), "/workspace/sub/g", "1"); code == 0 {
		t.Fatal("an append creating a file beyond the disk's space succeeded")
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub/g")); !os.IsNotExist(err) {
		t.Errorf("the failed append left sub/g behind: %v", err)
	}
}

// In the container too: a file of 4 GiB and more is read at its offsets
// with its whole size, and an edit of it fails with output_limit instead
// of writing back the part of it that was read.
func TestLargeFileInContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	const size, at = 4<<30 + 10, 4<<30 + 2
	line := "printf 'hello world' >big && truncate -s " + strconv.FormatInt(size, 10) + " big && " +
		"printf HELLO | dd of=big bs=1 seek=" + strconv.FormatInt(at, 10) + " conv=notrunc 2>/dev/null && stat -c %s big"
	if out := h.shell(c, line); out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != strconv.FormatInt(size, 10) {
		t.Skipf("no sparse file of %d bytes in the volume: %+v", int64(size), out)
	}
	r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "big", Offset: at, Limit: 5}), nil))
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("read at %d = %+v", int64(at), r)
	}
	var rd toolset.ReadOutput
	if err := json.Unmarshal(r.Output, &rd); err != nil {
		t.Fatal(err)
	}
	if rd.Content != "HELLO" || rd.Size != size || !rd.Truncated {
		t.Errorf("read at %d = %+v, want HELLO of a file of %d bytes", int64(at), rd, int64(size))
	}
	failure(t, h.post(c.Execute(tool(toolset.ToolEdit), mustJSON(toolset.EditInput{Path: "big", Old: "hello", New: "howdy"}), nil)), envapi.CodeOutputLimit)
	if out := h.shell(c, "stat -c %s big && head -c 11 big"); out.Stdout != strconv.FormatInt(size, 10)+"\nhello world" {
		t.Errorf("after the edit: %q, want the file as it was", out.Stdout)
	}
}
