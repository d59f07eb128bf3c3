package workspace

import (
	"encoding/json"
	"fmt"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
)

// swappable serves the current handler, so a restart keeps the URL.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) set(h http.Handler)                               { s.h.Store(&h) }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

// commandOutput checks a command tool's output.
func commandOutput(stdout string) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		var out toolset.CommandOutput
		if err := json.Unmarshal(raw, &out); err != nil {
			return err
		}
		if out.ExitCode != 0 || out.Stdout != stdout || out.Truncated {
			return fmt.Errorf("got %+v, want exit 0 and stdout %q", out, stdout)
		}
		return nil
	}
}

const conformanceSleep = 3 * time.Second

func TestConformance(t *testing.T) {
	const token = "workspace-conformance"
	conformance.Run(t, func(t *testing.T) conformance.Target {
		root := t.TempDir()
		sw := &swappable{}
		var running *Provider
		start := func(t conformance.T) {
			if running != nil {
				running.Close()
			}
			p, err := New(Options{Root: root})
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
			running = p
			sw.set(p.Handler(token))
		}
		start(t)
		t.Cleanup(func() { running.Close() })
		t.Cleanup(func() { killMarked(t, root) })
		return conformance.Target{
			BaseURL:            conformance.ServeHandler(t, sw),
			Token:              token,
			SetupConfiguration: json.RawMessage(`{"label":"conformance","release_on_turn_end":true}`),
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: tool(toolset.ToolCommand), Input: json.RawMessage(`{"argv":["echo","hello"]}`), Check: commandOutput("hello\n")},
				conformance.RoleSleep: {Implementation: tool(toolset.ToolCommand),
					Input: json.RawMessage(fmt.Sprintf(`{"argv":["sleep","%d"]}`, int(conformanceSleep.Seconds()))), Runs: conformanceSleep},
				conformance.RoleWrite: {Implementation: tool(toolset.ToolWrite), Input: json.RawMessage(`{"path":"state/k","content":"v1"}`)},
				conformance.RoleRead: {Implementation: tool(toolset.ToolRead), Input: json.RawMessage(`{"path":"state/k"}`), Check: func(raw json.RawMessage) error {
					var out toolset.ReadOutput
					if err := json.Unmarshal(raw, &out); err != nil {
						return err
					}
					if out.Content != "v1" {
						return fmt.Errorf("read %+v, want v1", out)
					}
					return nil
				}},
				conformance.RoleUnsupported: {Implementation: json.RawMessage(`{"tool":"teleport"}`), Input: json.RawMessage(`{}`)},
			},
			Capabilities: conformance.Capabilities{
				Cancel:         true,
				LazyAllocation: true,
				TurnEndRelease: "release",
				Methods: map[string]json.RawMessage{
					"inspect": json.RawMessage(`{}`),
					"reset":   json.RawMessage(`{}`),
					"release": json.RawMessage(`{"sequence":1}`),
				},
				Reporter: &conformance.ReporterTrigger{Call: "reset"},
				Restart:  start,
			},
		}
	}, &conformance.Options{
		Expect:   conformance.CapabilityNames(),
		Deadline: 1000 * time.Millisecond,
	})
}
