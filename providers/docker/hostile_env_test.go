package docker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command whose arguments or environment the kernel cannot take (a
// string of 128 KiB or more, or more than it takes in all) is the
// caller's input at fault: it fails with invalid_input, naming the field
// when one string is too long, and the binding keeps working.
func TestOversizedCommandInputIsInvalidInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "envs")
	big := strings.Repeat("x", 200<<10)
	for _, tc := range []struct {
		name  string
		in    toolset.CommandInput
		field string
	}{
		{"env value", toolset.CommandInput{Shell: "echo ok", Env: map[string]string{"GREETING": big}}, "input.env.GREETING"},
		{"shell line", toolset.CommandInput{Shell: "echo " + big}, "input.shell"},
		{"argument", toolset.CommandInput{Argv: []string{"echo", big}}, "input.argv"},
		{"all arguments", toolset.CommandInput{Argv: append([]string{"echo"}, strings.Split(strings.Repeat(strings.Repeat("y", 100<<10)+" ", 40), " ")...)}, ""},
	} {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(tc.in), nil))
		failure(t, r, envapi.CodeInvalidInput)
		if tc.field != "" {
			var d struct {
				Field string `json:"field"`
			}
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Field != tc.field {
				t.Fatalf("%s: details = %s, want field %s", tc.name, r.Details, tc.field)
			}
		}
	}
	if out := h.shell(c, "echo ok"); out.Stdout != "ok\n" {
		t.Fatalf("the binding no longer runs commands: %+v", out)
	}
}
