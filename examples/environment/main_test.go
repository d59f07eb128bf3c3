package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/providers/workspace"
)

// TestConformance runs the environment/v1 conformance suite against the
// notes environment, declaring what it supports: cancel, lazy allocation,
// methods and the reporter. Turn-end release and restart are not
// supported (notes live in memory).
func TestConformance(t *testing.T) {
	const token = "notes-conformance"
	conformance.Run(t, func(t *testing.T) conformance.Target {
		h := envsdk.NewHandler(newNotes(nil), &envsdk.Options{Token: token})
		return conformance.Target{
			BaseURL:            conformance.ServeHandler(t, h),
			Token:              token,
			SetupConfiguration: json.RawMessage(`{"label":"conformance"}`),
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: tool("get"), Input: json.RawMessage(`{"key":"absent"}`),
					Check: equalJSON(`{"key":"absent","found":false}`)},
				conformance.RoleSleep: {Implementation: tool("wait"), Input: json.RawMessage(`{"ms":3000}`), Runs: 3 * time.Second},
				conformance.RoleWrite: {Implementation: tool("put"), Input: json.RawMessage(`{"key":"k","value":"v1"}`)},
				conformance.RoleRead: {Implementation: tool("get"), Input: json.RawMessage(`{"key":"k"}`),
					Check: equalJSON(`{"key":"k","found":true,"value":"v1"}`)},
				conformance.RoleUnsupported: {Implementation: tool("teleport"), Input: json.RawMessage(`{}`)},
			},
			Capabilities: conformance.Capabilities{
				Cancel:         true,
				LazyAllocation: true,
				Methods:        map[string]json.RawMessage{"stats": json.RawMessage(`{}`)},
				Reporter:       &conformance.ReporterTrigger{Call: "report"},
			},
		}
	}, &conformance.Options{Expect: []string{conformance.CapCancel, conformance.CapLazyAllocation, conformance.CapMethods, conformance.CapReporter}})
}

func tool(name string) json.RawMessage { return json.RawMessage(`{"tool":"` + name + `"}`) }

func equalJSON(want string) func(json.RawMessage) error {
	return func(got json.RawMessage) error {
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			return err
		}
		_ = json.Unmarshal([]byte(want), &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			return fmt.Errorf("output %s, want %s", gb, wb)
		}
		return nil
	}
}

// TestRun starts the command's server and checks it authenticates.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &braintest.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--token", "tok"}, out, &braintest.Buffer{})
	}()
	url := braintest.WaitLine(t, out, "notes environment serving on ")
	resp, err := http.Post(url+"/v1/operations", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated request: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), nil, out, &braintest.Buffer{}); err == nil {
		t.Error("run without a token succeeded")
	}
}

// TestThroughBrain drives the environment through a real Brain, embedded
// in-process on a free port with a routes file that names this
// environment "notes"; a session places put and get on it and
// the scripted model calls them.
func TestThroughBrain(t *testing.T) {
	const envToken = "notes-route-token"
	h := envsdk.NewHandler(newNotes(nil), &envsdk.Options{Token: envToken})
	envURL := conformance.ServeHandler(t, h)
	dir := t.TempDir()
	routes := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routes, []byte(`{"notes":{"endpoint":"`+envURL+`","api_key":"`+envToken+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	brainURL := startBrain(t, func(c *brain.Config) { c.Environments.RoutesFile = routes })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(brainURL, &client.Options{Token: brainToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	place := func(name, desc, schema string) api.Tool {
		return api.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema),
			Placements: map[string]api.Placement{"notes": {Implementation: tool(name)}}}
	}
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "scripted", Name: "demo"},
		Environments: []api.Environment{{Name: "notes", Driver: api.DriverBrain,
			Configuration: json.RawMessage(`{"driver":"notes","label":"example"}`)}},
		Tools: []api.Tool{
			place("put", "Store a note", `{"type":"object","required":["key","value"],"properties":{"key":{"type":"string"},"value":{"type":"string"}}}`),
			place("get", "Read a note", `{"type":"object","required":["key"],"properties":{"key":{"type":"string"}}}`),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Summary.Status != api.StatusIdle {
		t.Fatalf("session %s after create", s.Summary.Status)
	}
	send := func(script string) {
		t.Helper()
		if _, err := s.Send(ctx, api.UserInput{Message: script}); err != nil {
			t.Fatalf("send %s: %v", script, err)
		}
	}
	send(`{"tool_calls":[{"name":"put","input":{"key":"greeting","value":"hello from notes"}}],"reply":"stored"}`)
	send(`{"tool_calls":[{"name":"get","input":{"key":"greeting"}}]}`)

	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Messages[len(tr.Messages)-1]
	if last.Role != api.RoleAssistant || !strings.Contains(last.Text(), "hello from notes") || !strings.Contains(last.Text(), `"found":true`) {
		t.Fatalf("last message %+v", last)
	}
	var changed, ended int
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.EventType {
		case ChangedEvent:
			changed++
			if ev.Origin == nil || ev.Origin.Kind != api.OriginEnvironment {
				t.Errorf("notes.changed origin %+v", ev.Origin)
			}
		case api.KindToolCallEnded:
			ended++
		}
	}
	if changed != 1 || ended != 2 {
		t.Fatalf("%d notes.changed diagnostics and %d tool_call_ended, want 1 and 2", changed, ended)
	}
}

const brainToken = "example-operator-token"

// startBrain embeds Brain in-process as "brain serve" runs it: the
// scripted model, and the workspace environment as the default route;
// edit may change the configuration.
func startBrain(t *testing.T, edit func(*brain.Config)) string {
	t.Helper()
	ws, err := workspace.New(workspace.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const wsToken = "example-workspace-token"
	return braintest.Start(t, braintest.Options{Token: brainToken, Edit: edit,
		Environments: map[string]braintest.Environment{
			"workspace": {Handler: ws.Handler(wsToken), APIKey: wsToken, Default: true},
		}}).URL
}
