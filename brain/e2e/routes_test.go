package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/providers/workspace"
)

const routeKey = "route-key-SECRET-77aa"

// brainWithRoutes starts a Brain whose binder has routes and a default
// endpoint.
func brainWithRoutes(t *testing.T, edit func(*brain.Config)) *brainServer {
	t.Helper()
	b, err := startWith(t.TempDir(), brain.Limits{}, nil, edit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}

// TestWorkspaceProvider runs the workspace provider behind Brain's default
// route: files written in one turn are read in the next, the turn-end
// release keeps them, end detaches and delete tears the workspace down.
func TestWorkspaceProvider(t *testing.T) {
	root := t.TempDir()
	p, err := workspace.New(workspace.Options{Root: root, Commands: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.Handler(routeKey)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	b := brainWithRoutes(t, func(c *brain.Config) {
		c.Environments.BaseURL, c.Environments.APIKey = "http://"+ln.Addr().String(), routeKey
	})
	c := newClient(t, b.URL)
	wsTool := func(name string) api.Tool {
		return api.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"ws": {Implementation: json.RawMessage(`{"tool":"` + name + `"}`)}}}
	}
	id := c.create(api.CreateSessionRequest{
		Environments: []api.Environment{{Name: "ws", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"release_on_turn_end":true}`)}},
		Tools:        []api.Tool{wsTool("write"), wsTool("read"), wsTool("command")},
	}).SessionID
	call := func(name string, input any) string {
		return script(map[string]any{"tool_calls": []map[string]any{{"name": name, "input": input}}})
	}
	if status, body := c.send(id, call("write", map[string]any{"path": "notes/a.txt", "content": "hello workspace"})); status != http.StatusOK {
		t.Fatalf("write: %d %s", status, body)
	}
	// The release of a turn may still run when the next message arrives
	// (and the workspace refuses to release while an execute runs), so
	// each turn waits for the previous release.
	released := func(n int) {
		t.Helper()
		c.waitEvent(id, func(api.Event) bool {
			evs := c.events(id)
			return len(ofKind(evs, api.KindEnvironmentCallEnded))+len(ofKind(evs, api.KindEnvironmentCallFailed)) >= n
		})
	}
	released(1)
	c.send(id, call("read", map[string]any{"path": "notes/a.txt"}))
	released(2)
	c.send(id, call("command", map[string]any{"argv": []string{"cat", "notes/a.txt"}}))
	released(3)
	evs := c.events(id)
	starts := ofKind(evs, api.KindToolCallStarted)
	if len(starts) != 3 {
		t.Fatalf("events %s", kindsLine(evs))
	}
	read, _ := outcome(t, evs, starts[1].Sequence)
	cmd, _ := outcome(t, evs, starts[2].Sequence)
	if !strings.Contains(string(read.Value), "hello workspace") || !strings.Contains(string(cmd.Value), "hello workspace") {
		t.Fatalf("read %+v, command %+v", read, cmd)
	}
	if n := len(ofKind(evs, api.KindEnvironmentCallFailed)); n != 0 {
		t.Fatalf("release failed: %s", kindsLine(evs))
	}
	var ended api.SessionSummary
	c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, &ended)
	if len(ofKind(c.events(id), api.KindEnvironmentDetachEnded)) != 1 {
		t.Fatalf("detach: %s", kindsLine(c.events(id)))
	}
	c.must(http.StatusNoContent, http.MethodDelete, "/v1/sessions/"+id, nil, nil)
	entries, _ := os.ReadDir(filepath.Join(root, "workspaces"))
	if len(entries) != 0 {
		t.Errorf("workspace left after teardown: %v", entries)
	}
}

// TestRoutes: a configuration driver selects a route from the routes
// file with the operator's key; a session URL never receives a Brain
// credential.
func TestRoutes(t *testing.T) {
	f := newFixture(t)
	routes := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(routes, []byte(`{"fixture":{"endpoint":"`+f.URL+`","api_key":"`+providerToken+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := brainWithRoutes(t, func(c *brain.Config) {
		c.Environments.RoutesFile = routes
		c.Environments.BaseURL, c.Environments.APIKey = f.URL, routeKey
	})
	c := newClient(t, b.URL)
	sum := c.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "r", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"fixture"}`)}}})
	if sum.Status != api.StatusIdle {
		t.Fatalf("routed setup: %s %s", sum.Status, kindsLine(c.events(sum.SessionID)))
	}
	if got := f.received(envapi.RequestSetup)[0].Auth; got != "Bearer "+providerToken {
		t.Fatalf("routed Authorization %q", got)
	}
	// The same provider named by a session URL without a credential gets
	// no credential at all (and refuses the setup).
	sum = c.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "u", Driver: api.DriverHTTP, URL: f.URL}}})
	setups := f.received(envapi.RequestSetup)
	if sum.Status != api.StatusFailed || len(setups) != 2 || setups[1].Auth != "" {
		t.Fatalf("session URL: %s, Authorization %q", sum.Status, setups[len(setups)-1].Auth)
	}
	evs := c.events(sum.SessionID)
	if len(ofKind(evs, api.KindEnvironmentUnreachable)) != 1 || !strings.Contains(kindsLine(evs), api.KindEnvironmentSetupFailed) {
		t.Errorf("refused setup: %s", kindsLine(evs))
	}
	// An endpoint that is neither HTTPS nor loopback is refused.
	if srv, err := brain.New(context.Background(), brain.Config{DataDir: t.TempDir(), PublicURL: b.URL,
		Environments: brain.Environments{BaseURL: "http://192.0.2.1:80"}}); err == nil {
		srv.Close(context.Background())
		t.Error("a non-loopback http endpoint was accepted")
	}
}
