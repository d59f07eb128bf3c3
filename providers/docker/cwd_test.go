package docker

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command's cwd is a path of the workspace like the file tools' paths:
// one that leads outside through a symbolic link fails with path_escape,
// one that does not exist with not_found and one that is not a directory
// with invalid_input; the command never runs elsewhere, and the Engine's
// refusal never passes for the command's own output.
func TestCommandCwdIsCheckedInTheContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "ln -s /etc etc-link && mkdir sub && ln -s sub inner && echo hi > f")
	for _, tc := range []struct{ cwd, code string }{
		{"etc-link", envapi.CodePathEscape},
		{"nope", envapi.CodeNotFound},
		{"f", envapi.CodeInvalidInput},
	} {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "pwd", Cwd: tc.cwd}), nil))
		if r.Type == envapi.ReceiptResult {
			t.Errorf("cwd %q ran: %s", tc.cwd, r.Output)
			continue
		}
		if r.Code != tc.code {
			t.Errorf("cwd %q = %+v, want failure %s", tc.cwd, r, tc.code)
		}
	}
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "pwd", Cwd: "inner"}), nil))
	if out := h.commandOutput(r); out.ExitCode != 0 || out.Stdout != "/workspace/sub\n" {
		t.Errorf("cwd through a link inside the workspace = %+v", out)
	}
}
