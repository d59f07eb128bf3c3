package docker

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command that prints more than the profile's output_bytes and then
// fails still reports what went wrong: the start of its stdout and the end
// of its stderr are kept within the cap, and truncated is set; a command
// within the cap keeps all of its output, and truncated is not set.
func TestOutputCapKeepsTheEndOfStderr(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	const limit = 4 << 10
	h := newHarnessWith(t, "", cli, Profiles{"default": {Image: image, OutputBytes: limit}})
	c := h.commands()
	h.setup(c, "")
	defer h.post(c.Teardown())
	const failing = `echo started; i=0; while [ $i -lt 2000 ]; do echo "step $i"; echo "  at frame <$i>" >&2; i=$((i+1)); done; echo 'Error: the disk é is full' >&2; exit 3`
	for _, tc := range []struct{ name, line string }{
		{"both streams", failing},
		{"stdout first", `head -c 100000 /dev/zero | tr '\0' o; echo; echo 'Error: the disk é is full' >&2; exit 3`},
		{"stderr only", `i=0; while [ $i -lt 2000 ]; do echo "  at frame <$i>" >&2; i=$((i+1)); done; echo 'Error: the disk é is full' >&2; exit 3`},
	} {
		out := h.shell(c, tc.line)
		if out.ExitCode != 3 || !out.Truncated || len(out.Stdout)+len(out.Stderr) > limit {
			t.Errorf("%s: exit %d, truncated %v, %d+%d bytes of output; want exit 3, truncated, at most %d bytes",
				tc.name, out.ExitCode, out.Truncated, len(out.Stdout), len(out.Stderr), limit)
		}
		if !strings.HasSuffix(out.Stderr, "Error: the disk é is full\n") || strings.ContainsRune(out.Stderr, '\uFFFD') {
			t.Errorf("%s: stderr does not end with the error: %q", tc.name, out.Stderr[max(0, len(out.Stderr)-200):])
		}
		if tc.name == "both streams" && (!strings.HasPrefix(out.Stdout, "started\nstep 0\n") || !strings.Contains(out.Stderr, "<1999>") || strings.Contains(out.Stderr, "<0>")) {
			t.Errorf("%s: want the start of stdout and the end of stderr: stdout %q..., stderr %q...", tc.name, out.Stdout[:min(40, len(out.Stdout))], out.Stderr[:min(40, len(out.Stderr))])
		}
		if tc.name == "stdout first" && (!strings.HasPrefix(out.Stdout, "ooo") || len(out.Stdout)+len(out.Stderr) != limit) {
			t.Errorf("%s: want the start of stdout filling what stderr leaves: %d bytes of stdout, %q", tc.name, len(out.Stdout), out.Stderr)
		}
	}
	whole := h.shell(c, `echo out; echo err >&2; exit 4`)
	if whole.ExitCode != 4 || whole.Truncated || whole.Stdout != "out\n" || whole.Stderr != "err\n" {
		t.Errorf("a command within the cap = %+v; want all of its output, not truncated", whole)
	}
	// Exactly the cap is not truncated.
	exact := h.shell(c, "head -c 4000 /dev/zero | tr '\\0' a; head -c 96 /dev/zero | tr '\\0' b >&2")
	if exact.Truncated || len(exact.Stdout) != 4000 || len(exact.Stderr) != 96 {
		t.Errorf("a command filling the cap: truncated %v, %d+%d bytes; want all of it, not truncated", exact.Truncated, len(exact.Stdout), len(exact.Stderr))
	}
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "exit 0"}), nil))
	if out := h.commandOutput(r); out.Truncated {
		t.Errorf("an empty output is truncated")
	}
}
