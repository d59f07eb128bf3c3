package loophost_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func impl(id string, grants string) json.RawMessage {
	s := `{"type":"brain_component","entrypoint":"run","id":"` + id + `"`
	if grants != "" {
		s += `,"grants":` + grants
	}
	return json.RawMessage(s + `}`)
}

func outcomeOf(t *testing.T, r envapi.Receipt) envapi.Outcome {
	t.Helper()
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("receipt %+v", r)
	}
	o, err := envapi.DecodeOutcome(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A Tool reads and writes only the directories it is granted, within what
// the operator allows; ".." and symbolic links do not lead out of a grant,
// and everything is denied by default.
func TestToolGrants(t *testing.T) {
	allowed := t.TempDir()
	ws := filepath.Join(allowed, "ws")
	outside := t.TempDir()
	secrets := t.TempDir()
	for _, d := range []string{ws, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ws, "in.txt"), []byte("inside"), 0o600))
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o600))
	must(os.WriteFile(filepath.Join(allowed, "sibling.txt"), []byte("sibling"), 0o600))
	must(os.WriteFile(filepath.Join(secrets, "token"), []byte("s3cret"), 0o600))
	must(os.Symlink(outside, filepath.Join(ws, "out-dir")))
	must(os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "out-file")))
	must(os.Symlink("../sibling.txt", filepath.Join(ws, "up-file")))

	h, id := toolHost(t, loophost.Options{FilesystemAllow: []string{allowed, loophost.AllowScratch}, SecretAllow: map[string]string{"api": secrets}})
	run := func(grants, in string) envapi.Outcome {
		t.Helper()
		d, err := h.ParseToolImplementation(impl(id, grants))
		if err != nil {
			t.Fatalf("grants %s: %v", grants, err)
		}
		return outcomeOf(t, runOp(t, h, id, loophost.ToolCall{Grants: d.Grants}, in))
	}
	value := func(o envapi.Outcome) string {
		t.Helper()
		if o.Status != envapi.StatusOK {
			t.Fatalf("outcome %+v %+v", o, o.Error)
		}
		var s string
		_ = json.Unmarshal(o.Value, &s)
		return s
	}
	refused := func(o envapi.Outcome, code string) {
		t.Helper()
		if o.Status != envapi.StatusError || o.Error.Code != code {
			t.Fatalf("outcome %+v %+v, want error %s", o, o.Error, code)
		}
	}
	write := `{"filesystem":{"workspace":{"path":"` + ws + `","access":"write"}}}`
	read := `{"filesystem":{"workspace":{"path":"` + ws + `","access":"read"}}}`

	if v := value(run(read, `{"op":"read","path":"/workspace/in.txt"}`)); v != "inside" {
		t.Fatalf("read %q", v)
	}
	refused(run(read, `{"op":"write","path":"/workspace/new.txt","content":"x"}`), "write_failed")
	if v := value(run(write, `{"op":"write","path":"/workspace/sub/new.txt","content":"made"}`)); v != "written" {
		t.Fatal(v)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub", "new.txt")); err != nil || string(b) != "made" {
		t.Fatalf("written file %q %v", b, err)
	}
	// Escapes: "..", a symbolic link to a directory or file outside, a
	// relative link that climbs out.
	for _, in := range []string{
		`{"op":"read","path":"/workspace/../sibling.txt"}`,
		`{"op":"read","path":"/workspace/sub/../../sibling.txt"}`,
		`{"op":"read","path":"/workspace/out-dir/secret.txt"}`,
		`{"op":"read","path":"/workspace/out-file"}`,
		`{"op":"read","path":"/workspace/up-file"}`,
		`{"op":"list","path":"/workspace/out-dir"}`,
	} {
		o := run(write, in)
		if o.Status == envapi.StatusOK {
			t.Errorf("%s escaped: %s", in, o.Value)
		}
	}
	for _, in := range []string{
		`{"op":"write","path":"/workspace/out-dir/planted.txt","content":"x"}`,
		`{"op":"write","path":"/workspace/../planted.txt","content":"x"}`,
	} {
		refused(run(write, in), "write_failed")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file was planted outside the workspace")
	}
	if _, err := os.Stat(filepath.Join(allowed, "planted.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file was planted beside the workspace")
	}
	// Nothing is visible without a grant.
	refused(run("", `{"op":"read","path":"/workspace/in.txt"}`), "read_failed")
	refused(run("", `{"op":"list","path":"/"}`), "list_failed")
	// Scratch is private to one invocation and removed after it.
	scratch := `{"filesystem":{"scratch":true}}`
	if v := value(run(scratch, `{"op":"write","path":"/scratch/a","content":"tmp"}`)); v != "written" {
		t.Fatal(v)
	}
	if v := value(run(scratch, `{"op":"list","path":"/scratch"}`)); v != "" {
		t.Fatalf("scratch kept %q", v)
	}
	// Secrets are read-only, and what the Tool answers of one is
	// recorded with it removed (the Tool read it whole).
	sec := `{"secrets":["api"]}`
	if v := value(run(sec, `{"op":"read","path":"/secrets/api/token"}`)); v != "[redacted]" {
		t.Fatalf("secret %q", v)
	}
	refused(run(sec, `{"op":"write","path":"/secrets/api/token","content":"x"}`), "write_failed")

	// Grants beyond what the operator allows are refused before running.
	for _, g := range []string{
		`{"filesystem":{"workspace":{"path":"` + outside + `","access":"read"}}}`,
		`{"filesystem":{"workspace":{"path":"` + ws + `/out-dir","access":"read"}}}`,
		`{"filesystem":{"workspace":{"path":"` + ws + `","access":"admin"}}}`,
		`{"secrets":["other"]}`,
		`{"network":["example.org"]}`,
	} {
		if _, err := h.ParseToolImplementation(impl(id, g)); err == nil {
			t.Errorf("grants %s accepted", g)
		}
	}
	closed, cid := toolHost(t, loophost.Options{})
	for _, g := range []string{write, scratch, sec} {
		_, err := closed.ParseToolImplementation(impl(cid, g))
		if !errors.Is(err, loophost.ErrNotAllowed) || !strings.Contains(err.Error(), "BRAIN_ENV_") {
			t.Errorf("default host accepted %s: %v", g, err)
		}
	}
}
