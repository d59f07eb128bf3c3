package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Credentials of TestReportedCredentialsNeverLeak.
const (
	reportedCredential = "http-credential-SECRET-3c17"
	reportedRouteKey   = "route-key-SECRET-e45b"
)

// TestReportedCredentialsNeverLeak: the providers of an http environment
// (with a session credential) and of a routed environment (with the
// route's api_key) keep their binding's reporter and report events and
// observations quoting their credential, before and after Brain restarts
// on the same data directory. The reports are recorded, and neither
// credential is in the events, the journal and other files on disk, or
// the server's log.
func TestReportedCredentialsNeverLeak(t *testing.T) {
	box := newReportingProvider(t, reportedCredential)
	routed := newReportingProvider(t, reportedRouteKey)
	dir := t.TempDir()
	routes := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routed":{"endpoint":"`+routed.URL+`","api_key":"`+reportedRouteKey+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The reporter URLs the providers keep name the address Brain serves
	// on, so the restarted Brain serves on the same one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := []string{"BRAIN_LISTEN=" + addr, "BRAIN_LOG_LEVEL=debug", "BRAIN_ENVIRONMENT_ROUTES_FILE=" + routes, "BRAIN_NO_WORKSPACE=1"}
	data := filepath.Join(dir, "data")
	s := start(t, data, env...)

	tool := func(env, name string) api.Tool {
		return api.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{env: {Implementation: json.RawMessage(`{}`)}}}
	}
	id := s.createSession(api.CreateSessionRequest{
		Environments: []api.Environment{
			{Name: "box", Driver: api.DriverHTTP, URL: box.URL, Credential: reportedCredential},
			{Name: "routed", Driver: api.DriverBrain, Configuration: json.RawMessage(`{"driver":"routed"}`)},
		},
		Tools: []api.Tool{tool("box", "boxed"), tool("routed", "routed_tool")},
	})
	turn := script(map[string]any{"tool_calls": []map[string]any{
		{"name": "boxed", "input": map[string]any{}}, {"name": "routed_tool", "input": map[string]any{}},
	}})
	if r := s.send(id, turn); r.Status != 200 {
		t.Fatalf("tool turn = %d %s", r.Status, r.Body)
	}
	secrets := map[string]string{"environment credential": reportedCredential, "route api_key": reportedRouteKey}
	for _, p := range []*reportingProvider{box, routed} {
		rep := p.reporter()
		if rep == nil {
			t.Fatalf("the provider of %s kept no reporter", p.credential)
		}
		// The scan is not vacuous: the credential reached the provider.
		if got := p.Received(envapi.RequestExecute, ""); len(got) != 1 || got[0].Auth != "Bearer "+p.credential {
			t.Fatalf("executes: %+v", got)
		}
		o := p.Received(envapi.RequestExecute, "")[0].Cmd.Operation
		secrets["reporter token of "+o.Environment] = o.Reporter.Token
	}

	report := func(phase string) {
		t.Helper()
		for _, p := range []*reportingProvider{box, routed} {
			if err := p.quote(t.Context(), phase); err != nil {
				t.Fatalf("%s: the provider of %s reports: %v\n%s", phase, p.credential, err, s.stderr)
			}
		}
	}
	report("before")
	waitIdle(t, s, id)
	before := s.events(id)
	s.stop()
	stderr := s.stderr.String()

	s = start(t, data, env...)
	report("after")
	waitIdle(t, s, id)
	evs := s.events(id)
	if n := len(ofKind(evs, "quoted")); n != 4 {
		t.Fatalf("%d quoted events recorded, want 4: %v", n, kinds(evs))
	}
	if n := len(ofKind(evs, api.KindOutputEmitted)); n != 4 {
		t.Fatalf("%d observations recorded, want 4: %v", n, kinds(evs))
	}
	if !bytes.Contains(ofKind(evs, "quoted")[3].Data, []byte("[redacted]")) {
		t.Errorf("the last quoted event is %s", ofKind(evs, "quoted")[3].Data)
	}
	listed := s.do("GET", "/v1/sessions/"+id+"/events?after=0", "")
	if listed.Status != 200 {
		t.Fatalf("events = %d %s", listed.Status, listed.Body)
	}
	s.stop()
	stderr += s.stderr.String()

	check := func(where string, b []byte) {
		t.Helper()
		for name, v := range secrets {
			if i := bytes.Index(b, []byte(v)); i >= 0 {
				t.Errorf("%s found in %s: …%s…", name, where, b[max(0, i-200):min(len(b), i+len(v)+50)])
			}
		}
	}
	raw, _ := json.Marshal(append(before, evs...))
	check("the events", raw)
	check("the events answer", listed.Body)
	if !strings.Contains(stderr, "level=DEBUG") {
		t.Fatalf("no debug log in stderr:\n%s", stderr)
	}
	check("stderr", []byte(stderr))
	scanFiles(t, data, check)
}

// reportingProvider is an environment provider whose tools succeed and
// that keeps its binding's reporter; quote reports through it an event
// and an observation quoting its credential, as a careless provider
// might.
type reportingProvider struct {
	envsdk.Base
	*envtest.Provider
	credential string

	mu  sync.Mutex
	rep *envsdk.Reporter
}

func newReportingProvider(t *testing.T, credential string) *reportingProvider {
	t.Helper()
	p := &reportingProvider{credential: credential}
	p.Provider = envtest.NewProvider(t, envsdk.NewHandler(p, &envsdk.Options{Token: credential}))
	return p
}

func (p *reportingProvider) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	p.mu.Lock()
	p.rep = c.Reporter()
	p.mu.Unlock()
	return envapi.Result(json.RawMessage(`"ok"`)), nil
}

func (p *reportingProvider) reporter() *envsdk.Reporter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rep
}

func (p *reportingProvider) quote(ctx context.Context, phase string) error {
	quoted := map[string]string{"phase": phase, "credential": p.credential, "note": "my key is " + p.credential}
	if _, err := p.reporter().Event(ctx, "quoted", quoted); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	obs := envapi.Observation{Scope: envapi.ScopeResource, Resource: "disk", Code: envapi.CodeResourceLost,
		Message: "lost with credential " + p.credential}
	if _, err := p.reporter().Result(ctx, obs, quoted); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}
