package workspace

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// sized posts cmd to url and answers the receipt and the bytes of the
// whole answer, as Brain measures it against its bound.
func sized(t *testing.T, url string, cmd envapi.Command) (envapi.Receipt, int) {
	t.Helper()
	status, body, resp, err := envtest.Post(t.Context(), nil, url, "secret-token", cmd)
	if err != nil || resp == nil {
		t.Fatalf("post: status %d, %v: %.200s", status, err, body)
	}
	return resp.Receipt, len(body)
}

// An operator who lowers the answer Brain takes (MaxAnswerBytes) gets
// reads, command outputs and lists cut to fit it, with truncated set,
// though the output limit lets more through: content JSON writes six
// bytes for ('<' is "\u003c") never makes an answer larger than the bound,
// and a read continued from where the cut one ended reads the rest.
func TestLoweredAnswerBoundIsFollowed(t *testing.T) {
	const bound = 64 << 10
	f := newFixture(t, Options{MaxAnswerBytes: bound, MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	content := strings.Repeat("<a\x01é", 50<<10) // 250 KiB, within the output limit
	ok(t, f.exec(c, "write", map[string]string{"path": "page", "content": content}, nil), nil)

	var got strings.Builder
	for offset, reads := 0, 0; offset < len(content); reads++ {
		r, n := sized(t, f.url, c.Execute(tool("read"), mustJSON(t, map[string]any{"path": "page", "offset": offset}), nil))
		var rd toolset.ReadOutput
		ok(t, r, &rd)
		if n > bound {
			t.Fatalf("read at %d answered %d bytes, more than the bound of %d", offset, n, bound)
		}
		if rd.Encoding != toolset.EncodingUTF8 || rd.Content == "" || reads > 100 {
			t.Fatalf("read at %d: %s content of %d bytes after %d reads", offset, rd.Encoding, len(rd.Content), reads)
		}
		if end := offset + len(rd.Content); rd.Truncated != (end < len(content)) {
			t.Fatalf("read at %d up to %d: truncated %v", offset, end, rd.Truncated)
		}
		if offset == 0 && n < bound*3/4 {
			t.Errorf("the first read answered %d bytes: cut far below the bound of %d", n, bound)
		}
		got.WriteString(rd.Content)
		offset += len(rd.Content)
	}
	if got.String() != content {
		t.Fatal("the reads continued from where each ended do not join into the file")
	}

	r, n := sized(t, f.url, c.Execute(tool("command"), mustJSON(t, map[string]string{"shell": "cat page; cat page >&2; exit 3"}), nil))
	var out toolset.CommandOutput
	ok(t, r, &out)
	if n > bound || !out.Truncated || out.ExitCode != 3 {
		t.Fatalf("command: %d bytes (bound %d), truncated %v, exit %d", n, bound, out.Truncated, out.ExitCode)
	}
	if !strings.HasPrefix(content, out.Stdout) || !strings.HasSuffix(content, out.Stderr) || len(out.Stdout) < 4<<10 || len(out.Stderr) < 4<<10 {
		t.Errorf("command kept %d and %d bytes, not the head of stdout and the end of stderr", len(out.Stdout), len(out.Stderr))
	}

	// A stopped command's output goes into its failure's details, which
	// keeps its code rather than becoming output_limit.
	deadline := int64(3000)
	r, n = sized(t, f.url, c.Execute(tool("command"), mustJSON(t, map[string]string{"shell": "cat page; sleep 60"}), &deadline))
	fails(t, r, envapi.CodeTimeout)
	var details struct {
		Stdout    string `json:"stdout"`
		Truncated bool   `json:"truncated"`
	}
	if err := json.Unmarshal(r.Details, &details); err != nil || n > bound || !details.Truncated || !strings.HasPrefix(content, details.Stdout) {
		t.Errorf("timeout: %d bytes (bound %d), details truncated %v, %v", n, bound, details.Truncated, err)
	}

	ws := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 { // about 100 KiB of entries as JSON
		if err := os.WriteFile(filepath.Join(ws, "d", fmt.Sprintf("<<<<<%04d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, n = sized(t, f.url, c.Execute(tool("list"), mustJSON(t, map[string]string{"path": "d"}), nil))
	var list toolset.ListOutput
	ok(t, r, &list)
	if n > bound || !list.Truncated || len(list.Entries) < 500 || list.Entries[0].Path != "d/<<<<<0000" {
		t.Errorf("list: %d bytes (bound %d), %d entries, truncated %v", n, bound, len(list.Entries), list.Truncated)
	}
}

// --max-answer-bytes sets the bound the provider keeps its answers in; a
// bound that is not positive is refused by name.
func TestCommandTakesMaxAnswerBytes(t *testing.T) {
	stopped, stop := context.WithCancel(t.Context())
	stop()
	for _, v := range []string{"0", "-1"} {
		var out, errb bytes.Buffer
		args := []string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth", "--max-answer-bytes", v}
		if got := Command(stopped, args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "--max-answer-bytes") {
			t.Errorf("--max-answer-bytes %s: exit %d, %q", v, got, errb.String())
		}
	}
	if _, err := New(Options{Root: t.TempDir(), MaxAnswerBytes: -1}); err == nil {
		t.Error("New with a negative MaxAnswerBytes succeeded")
	}

	const bound = 16 << 10
	t.Setenv(TokenEnv, "secret-token")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, code, stderr := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--root", t.TempDir(), "--max-answer-bytes", fmt.Sprint(bound))
	c := envtest.NewCommands("s1", "workspace")
	c.Brain = envtest.NewBrain(t)
	if r, _ := sized(t, url, c.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v", r)
	}
	r, n := sized(t, url, c.Execute(tool("command"), mustJSON(t, sh("head -c 100000 /dev/zero | tr '\\0' '<'")), nil))
	var out toolset.CommandOutput
	ok(t, r, &out)
	if n > bound || !out.Truncated || len(out.Stdout) < 1000 {
		t.Errorf("command: %d bytes (bound %d), %d bytes of stdout, truncated %v", n, bound, len(out.Stdout), out.Truncated)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit code %d, stderr %s", got, stderr.String())
	}
}

// A bound too small to hold any useful answer is refused at start, by
// name: below MinAnswerBytes not even the failure output_limit, which
// replaces a larger answer, fits in it, nor a read with one character of
// a file, so a caller paging through the file would make no progress. At
// the least bound taken every answer fits in it and a caller paging
// through a file by offset reads all of it, whatever its characters.
func TestSmallestAnswerBound(t *testing.T) {
	stopped, stop := context.WithCancel(t.Context())
	stop()
	for _, v := range []int64{1, 200, MinAnswerBytes - 1} {
		var out, errb bytes.Buffer
		args := []string{"--root", t.TempDir(), "--listen", "127.0.0.1:0", "--no-auth", "--max-answer-bytes", fmt.Sprint(v)}
		if got := Command(stopped, args, &out, &errb); got != 2 || !strings.Contains(errb.String(), "--max-answer-bytes") {
			t.Errorf("--max-answer-bytes %d: exit %d, %q", v, got, errb.String())
		}
		if _, err := New(Options{Root: t.TempDir(), MaxAnswerBytes: v}); !errors.Is(err, ErrOptions) {
			t.Errorf("New with MaxAnswerBytes %d: %v, want %v", v, err, ErrOptions)
		}
	}

	const bound = MinAnswerBytes
	t.Setenv(TokenEnv, "secret-token")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	root := t.TempDir()
	url, code, stderr := startCommand(t, ctx, "--listen", "127.0.0.1:0", "--root", root, "--max-bytes", "-1", "--max-answer-bytes", fmt.Sprint(bound))
	c := envtest.NewCommands("s1", "workspace")
	c.Brain = envtest.NewBrain(t)
	if r, _ := sized(t, url, c.Setup(nil)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v", r)
	}
	files := map[string]string{
		// Characters JSON writes in six bytes, and the longest UTF-8 ones.
		"text": strings.Repeat("<\x00\u2028😀é\"", 300),
		// Not UTF-8: answered in base64.
		"binary": strings.Repeat("\xff\xfe<\x00\x80", 300),
	}
	for name, content := range files {
		in := map[string]string{"path": name, "content": base64.StdEncoding.EncodeToString([]byte(content)), "encoding": toolset.EncodingBase64}
		if r, _ := sized(t, url, c.Execute(tool("write"), mustJSON(t, in), nil)); r.Type != envapi.ReceiptResult {
			t.Fatalf("write %s: %+v", name, r)
		}
		var got []byte
		for offset, reads := 0, 0; offset < len(content); reads++ {
			r, n := sized(t, url, c.Execute(tool("read"), mustJSON(t, map[string]any{"path": name, "offset": offset}), nil))
			var rd toolset.ReadOutput
			ok(t, r, &rd)
			data, err := []byte(rd.Content), error(nil)
			if rd.Encoding == toolset.EncodingBase64 {
				data, err = base64.StdEncoding.DecodeString(rd.Content)
			}
			if err != nil || n > bound || len(data) == 0 || reads > len(content) {
				t.Fatalf("%s at %d: %d bytes answered (bound %d), %d read, %v", name, offset, n, bound, len(data), err)
			}
			got = append(got, data...)
			offset += len(data)
		}
		if string(got) != content {
			t.Errorf("the reads of %s continued from where each ended do not join into the file", name)
		}
	}

	// A file whose size takes many digits, read near its end, where it
	// holds NUL bytes (six bytes each in JSON).
	dirs := workspaceDirs(t, root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v", dirs)
	}
	const size = 1 << 40
	if err := os.Truncate(filepath.Join(root, "workspaces", dirs[0], "text"), size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", int64(size), err)
	}
	r, n := sized(t, url, c.Execute(tool("read"), mustJSON(t, map[string]any{"path": "text", "offset": size - 1000}), nil))
	var rd toolset.ReadOutput
	ok(t, r, &rd)
	if n > bound || rd.Content == "" || !rd.Truncated {
		t.Errorf("read near the end of a large file: %d bytes answered (bound %d), %d read, truncated %v", n, bound, len(rd.Content), rd.Truncated)
	}

	r, n = sized(t, url, c.Execute(tool("command"), mustJSON(t, sh("head -c 5000 /dev/zero | tr '\\0' '<'; head -c 5000 /dev/zero >&2")), nil))
	var out toolset.CommandOutput
	ok(t, r, &out)
	if n > bound || !out.Truncated || out.Stdout == "" || out.Stderr == "" {
		t.Errorf("command: %d bytes (bound %d), %d and %d bytes of output, truncated %v", n, bound, len(out.Stdout), len(out.Stderr), out.Truncated)
	}
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit code %d, stderr %s", got, stderr.String())
	}
}
