package docker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A path no file system can hold (a name longer than 255 bytes, a path
// longer than the kernel takes) or one that cannot be resolved (a loop of
// symbolic links) is the input's fault: every tool answers invalid_input
// naming the path, as the workspace provider does, and nothing is
// created.
func TestFileToolsRefuseUnresolvableNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "ln -s loop loop && mkdir d && ln -s ../d/a d/a"); out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}
	long := strings.Repeat("n", 256)
	deep := strings.Repeat("dd/", 1400) + "f"
	for _, p := range []string{long, "d/" + long + "/f", deep, "loop", "d/a", "loop/f"} {
		for _, tc := range []struct {
			tool  string
			input any
		}{
			{toolset.ToolWrite, toolset.WriteInput{Path: p, Content: "x"}},
			{toolset.ToolWrite, toolset.WriteInput{Path: p, Content: "x", Append: true}},
			{toolset.ToolRead, toolset.ReadInput{Path: p}},
			{toolset.ToolList, toolset.ListInput{Path: p}},
			{toolset.ToolEdit, toolset.EditInput{Path: p, Old: "a", New: "b"}},
			{toolset.ToolCommand, toolset.CommandInput{Argv: []string{"true"}, Cwd: p}},
		} {
			r := h.post(c.Execute(tool(tc.tool), mustJSON(tc.input), nil))
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidInput {
				t.Errorf("%s %.40q: %s %s: %.200s, want invalid_input", tc.tool, p, r.Type, r.Code, r.Message)
				continue
			}
			var d struct{ Path string }
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Path != p {
				t.Errorf("%s %.40q: details %s, want the path", tc.tool, p, r.Details)
			}
		}
	}
	if out := h.shell(c, "ls -A d; ls -A"); out.Stdout != "a\nd\nloop\n" {
		t.Errorf("the workspace holds %q afterwards, want what it held", out.Stdout)
	}
}

// Names may end in a newline: every tool acts on the file named, never on
// the one named without the newline beside it.
func TestFileToolsOnNamesEndingInNewlines(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "printf other > f && mkdir d 'd\n' && : > d/y && : > 'd\n/x' && printf file > e"); out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}
	exec := func(name string, input any) json.RawMessage {
		t.Helper()
		r := h.post(c.Execute(tool(name), mustJSON(input), nil))
		if r.Type != envapi.ReceiptResult {
			t.Fatalf("%s %s = %s %s: %s", name, mustJSON(input), r.Type, r.Code, r.Message)
		}
		return r.Output
	}
	read := func(p string) string {
		t.Helper()
		var out toolset.ReadOutput
		if err := json.Unmarshal(exec(toolset.ToolRead, toolset.ReadInput{Path: p}), &out); err != nil {
			t.Fatal(err)
		}
		return out.Content
	}
	exec(toolset.ToolWrite, toolset.WriteInput{Path: "f\n", Content: "new"})   // creates it
	exec(toolset.ToolWrite, toolset.WriteInput{Path: "f\n", Content: "newer"}) // replaces it
	exec(toolset.ToolWrite, toolset.WriteInput{Path: "f\n", Content: "!", Append: true})
	exec(toolset.ToolEdit, toolset.EditInput{Path: "f\n", Old: "newer", New: "edited"})
	if got := read("f\n"); got != "edited!" {
		t.Errorf("f\\n holds %q, want %q", got, "edited!")
	}
	if got := read("f"); got != "other" {
		t.Errorf("f holds %q, want it untouched", got)
	}
	exec(toolset.ToolWrite, toolset.WriteInput{Path: "e\n/h", Content: "in a new directory"})
	if got := read("e\n/h"); got != "in a new directory" {
		t.Errorf("e\\n/h holds %q", got)
	}
	var list toolset.ListOutput
	if err := json.Unmarshal(exec(toolset.ToolList, toolset.ListInput{Path: "d\n"}), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Entries) != 1 || list.Entries[0].Path != "d\n/x" {
		t.Errorf("list d\\n = %+v, want d\\n/x", list.Entries)
	}
	var out toolset.CommandOutput
	if err := json.Unmarshal(exec(toolset.ToolCommand, toolset.CommandInput{Argv: []string{"ls"}, Cwd: "d\n"}), &out); err != nil {
		t.Fatal(err)
	}
	if out.Stdout != "x\n" {
		t.Errorf("ls in d\\n printed %q, want x", out.Stdout)
	}
}

// A path whose form names a directory (it ends in a slash, or in "/.")
// is refused by the tools that work on a file: invalid_input naming the
// path, as the workspace provider does. Cleaning it would drop the slash,
// and "a/" would write the file a.
func TestFileToolsRefuseAPathNamingADirectory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "printf x >f && mkdir d && printf x >d/g"); out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}
	for _, p := range []string{"a/", "f/", "d/", "f/.", "d/g/"} {
		for _, tc := range []struct {
			tool  string
			input any
		}{
			{toolset.ToolWrite, toolset.WriteInput{Path: p, Content: "y"}},
			{toolset.ToolWrite, toolset.WriteInput{Path: p, Content: "y", Append: true}},
			{toolset.ToolRead, toolset.ReadInput{Path: p}},
			{toolset.ToolEdit, toolset.EditInput{Path: p, Old: "x", New: "y"}},
		} {
			r := h.post(c.Execute(tool(tc.tool), mustJSON(tc.input), nil))
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidInput {
				t.Errorf("%s %q: %s %s: %.200s, want invalid_input", tc.tool, p, r.Type, r.Code, r.Message)
				continue
			}
			var d struct{ Path string }
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Path != p {
				t.Errorf("%s %q: details %s, want the path", tc.tool, p, r.Details)
			}
		}
	}
	if out := h.shell(c, "ls -A; cat f d/g"); out.Stdout != "d\nf\nxx" {
		t.Errorf("workspace after the refused tools: %q, want d, f and both files unchanged", out.Stdout)
	}
}
