package conformance_test

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// A profile setting that no case reads would let its author believe the
// suite checks something it does not: the profile is refused, and the
// error names the setting.
func TestProfileRefusesSettingsWithoutEffect(t *testing.T) {
	const echo = `"echo":{"implementation":1,"input":1}`
	for name, tc := range map[string]struct{ profile, want string }{
		"sleep output":                {`{"executes":{` + echo + `,"sleep":{"implementation":1,"input":1,"output":{"done":true}}}}`, "executes.sleep"},
		"progress output_contains":    {`{"executes":{` + echo + `,"progress":{"implementation":1,"input":1,"output_contains":{"a":1}}}}`, "executes.progress"},
		"stuck output":                {`{"executes":{` + echo + `,"stuck":{"implementation":1,"input":1,"output":1}}}`, "executes.stuck"},
		"unsupported output":          {`{"executes":{` + echo + `,"unsupported":{"implementation":1,"input":1,"output":1}}}`, "executes.unsupported"},
		"echo runs_ms":                {`{"executes":{"echo":{"implementation":1,"input":1,"runs_ms":100}}}`, "executes.echo"},
		"write runs_ms":               {`{"executes":{` + echo + `,"write":{"implementation":1,"input":1,"runs_ms":100}}}`, "executes.write"},
		"stuck runs_ms":               {`{"executes":{` + echo + `,"stuck":{"implementation":1,"input":1,"runs_ms":100}}}`, "executes.stuck"},
		"restart expected remotely":   {`{"executes":{` + echo + `},"expect":["restart"]}`, "restart"},
		"negative deadline_ms":        {`{"executes":{` + echo + `},"options":{"deadline_ms":-500}}`, "deadline_ms"},
		"negative max_body_bytes":     {`{"executes":{` + echo + `},"options":{"max_body_bytes":-1}}`, "max_body_bytes"},
		"negative runs_ms of a sleep": {`{"executes":{` + echo + `,"sleep":{"implementation":1,"input":1,"runs_ms":-1}}}`, "runs_ms"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := conformance.ParseProfile([]byte(tc.profile))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseProfile: %v, want an error naming %s", err, tc.want)
			}
		})
	}

	// The settings the cases do read still parse.
	for _, ok := range []string{
		`{"executes":{` + echo + `,"sleep":{"implementation":1,"input":1,"runs_ms":3000},"progress":{"implementation":1,"input":1,"runs_ms":500}}}`,
		`{"executes":{"echo":{"implementation":1,"input":1,"output":1},"write":{"implementation":1,"input":1,"output_contains":{"ok":true}},"allocation":{"implementation":1,"input":1,"output_contains":{"id":"a"}}}}`,
	} {
		if _, err := conformance.ParseProfile([]byte(ok)); err != nil {
			t.Errorf("ParseProfile(%s): %v", ok, err)
		}
	}
}
