package docker

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A write through a symbolic link whose target does not exist yet (inside
// the workspace) creates the target and keeps the link, as an append
// through it does and as writing through a link to an existing file does.
func TestWriteThroughDanglingLinkKeepsTheLink(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "mkdir conf && ln -s conf/app.json current && ln -s current again && ln -s conf/log.txt log")
	for _, in := range []toolset.WriteInput{
		{Path: "current", Content: "{}\n"},
		{Path: "again", Content: "{\"v\":2}\n"},
		{Path: "log", Content: "one\n", Append: true},
	} {
		if r := h.post(c.Execute(tool(toolset.ToolWrite), mustJSON(in), nil)); r.Type != envapi.ReceiptResult {
			t.Fatalf("write %+v = %+v", in, r)
		}
	}
	out := h.shell(c, "for l in current again log; do readlink $l || echo $l is no link; done; cat conf/app.json conf/log.txt; ls -A conf | tr '\\n' ' '")
	if want := "conf/app.json\ncurrent\nconf/log.txt\n{\"v\":2}\none\napp.json log.txt "; out.Stdout != want {
		t.Fatalf("after writes through links:\n%s\nwant\n%s", out.Stdout, want)
	}
}
