package docker

import (
	"net/http/httptest"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A binding whose profile the restarted provider no longer offers must not
// run anything: the profile's user, limits and network are gone, and
// running with none of them would give the session an unhardened
// container (root, the default network, no limits).
func TestBindingOfWithdrawnProfileRunsNothing(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	stateDir := t.TempDir()
	first := newHarness(t, stateDir)
	c := first.commands()
	first.setup(c, "default")

	p, err := New(Config{Profiles: Profiles{"other": {Image: image}}, StateDir: stateDir, Client: cli})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(p.Handler(testToken))
	t.Cleanup(srv.Close)
	h := &harness{t: t, p: p, url: srv.URL, brain: first.brain}

	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "id -u"}), nil))
	if r.Type == envapi.ReceiptResult {
		t.Fatalf("execute on a binding of a withdrawn profile ran: %s", r.Output)
	}
	failure(t, r, envapi.CodeUnavailable)
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("execute allocated %d containers and %d volumes for a withdrawn profile", ctrs, vols)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}
