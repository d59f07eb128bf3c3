package docker

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// Short variable names the profile allows reach the command with the
// values the execute gave, whatever names the provider uses for its own
// bookkeeping inside the container.
func TestShortEnvNamesReachTheCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "short")
	env := map[string]string{"b": "bee", "c": "sea", "f": "eff", "t": "tea", "A": "a", "nl": "en-el"}
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: `printf '%s,%s,%s,%s,%s,%s' "$b" "$c" "$f" "$t" "$A" "$nl"`, Env: env,
	}), nil))
	if out := h.commandOutput(r); out.ExitCode != 0 || out.Stdout != "bee,sea,eff,tea,a,en-el" {
		t.Fatalf("command = %+v; want the variables as given: bee,sea,eff,tea,a,en-el", out)
	}
	// A name that only starts like an allowed one is refused.
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "true", Env: map[string]string{"ff": "x"},
	}), nil)), envapi.CodeInvalidInput)
}
