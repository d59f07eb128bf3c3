package docker

import (
	"encoding/json"
	"fmt"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
)

// swapHandler lets a restart replace the provider behind one URL.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func TestConformance(t *testing.T) {
	cli, image := testEngine(t)
	t.Parallel()
	conformance.Run(t, func(t *testing.T) conformance.Target {
		stateDir := t.TempDir()
		newP := func() *Provider {
			p, err := New(Config{Profiles: testProfiles(image), StateDir: stateDir, Client: cli})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			return p
		}
		p := newP()
		cleanupInstance(t, cli, p.Instance())
		var sw swapHandler
		sw.set(p.Handler(testToken))
		srv := httptest.NewServer(&sw)
		t.Cleanup(srv.Close)
		cmd := func(line string) json.RawMessage { return mustJSON(toolset.CommandInput{Shell: line}) }
		return conformance.Target{
			BaseURL:            srv.URL,
			Token:              testToken,
			SetupConfiguration: json.RawMessage(`{"profile":"default"}`),
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {
					Implementation: tool(toolset.ToolCommand), Input: cmd("echo hello"),
					Check: checkCommand("hello\n"),
				},
				conformance.RoleSleep: {
					Implementation: tool(toolset.ToolCommand), Input: cmd("sleep 5"), Runs: 5 * time.Second,
				},
				conformance.RoleWrite: {
					Implementation: tool(toolset.ToolWrite), Input: mustJSON(toolset.WriteInput{Path: "conformance/state", Content: "written"}),
				},
				conformance.RoleRead: {
					Implementation: tool(toolset.ToolRead), Input: mustJSON(toolset.ReadInput{Path: "conformance/state"}),
					Check: func(out json.RawMessage) error {
						var r toolset.ReadOutput
						if err := json.Unmarshal(out, &r); err != nil || r.Content != "written" {
							return fmt.Errorf("read %s (%v); want content \"written\"", out, err)
						}
						return nil
					},
				},
			},
			Capabilities: conformance.Capabilities{
				Cancel:         true,
				LazyAllocation: true,
				Restart:        func(conformance.T) { sw.set(newP().Handler(testToken)) },
			},
		}
	}, &conformance.Options{Expect: []string{conformance.CapCancel, conformance.CapLazyAllocation, conformance.CapRestart}})
}

func checkCommand(stdout string) func(json.RawMessage) error {
	return func(out json.RawMessage) error {
		var o toolset.CommandOutput
		if err := json.Unmarshal(out, &o); err != nil || o.ExitCode != 0 || o.Stdout != stdout {
			return fmt.Errorf("command output %s (%v); want exit 0 and stdout %q", out, err, stdout)
		}
		return nil
	}
}
