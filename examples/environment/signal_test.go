package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/examples/internal/cli/clitest"
)

// serving starts the environment command on a free loopback port and
// answers the process and its URL.
func serving(t *testing.T, token string) (*clitest.Process, string) {
	t.Helper()
	p := clitest.Start(t, []string{"--listen", "127.0.0.1:0"}, "NOTES_TOKEN="+token)
	const prefix = "notes environment serving on "
	if !p.WaitOutput(false, "\n", 30*time.Second) || !strings.HasPrefix(p.Stdout(), prefix) {
		t.Fatalf("not serving:\n%s\n%s", p.Stdout(), p.Stderr())
	}
	return p, strings.TrimSpace(strings.TrimPrefix(p.Stdout(), prefix))
}

// TestSignalStopsServing: SIGTERM or SIGINT with nothing running stops
// the server: it exits 0 saying it stops.
func TestSignalStopsServing(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		p, _ := serving(t, "notes-signal-token")
		p.Signal(t, sig)
		code, ok := p.Exited(30 * time.Second)
		if !ok || code != 0 || !strings.Contains(p.Stderr(), "environment: "+sig.String()+": stopping") {
			t.Fatalf("after %v: exited %v with %d, stderr:\n%s", sig, ok, code, p.Stderr())
		}
	}
}

// TestSecondSignalQuits: a signal while a tool runs lets it finish (a
// wait of ten minutes, here) before the server stops; a second signal
// quits at once, exit 1, saying so. Brain records the call it lost the
// answer of as unknown and the turn ends.
func TestSecondSignalQuits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a whole Brain over loopback")
	}
	const envToken = "notes-signal-token"
	p, envURL := serving(t, envToken)
	// Brain reaches the environment through a proxy that tells when it
	// forwards an execute.
	target, err := url.Parse(envURL)
	if err != nil {
		t.Fatal(err)
	}
	executing := make(chan struct{})
	var once sync.Once
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"type":"execute"`)) {
			once.Do(func() { close(executing) })
		}
		rp.ServeHTTP(w, r)
	}))
	defer func() {
		proxy.CloseClientConnections()
		proxy.Close()
	}()
	routes := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(routes, []byte(`{"notes":{"endpoint":"`+proxy.URL+`","api_key":"`+envToken+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	brainURL := startBrain(t, func(c *brain.Config) { c.Environments.RoutesFile = routes })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := client.New(brainURL, &client.Options{Token: brainToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model: api.ModelConfig{Provider: "scripted", Name: "demo"},
		Environments: []api.Environment{{Name: "notes", Driver: api.DriverBrain,
			Configuration: json.RawMessage(`{"driver":"notes"}`)}},
		Tools: []api.Tool{{Name: "wait", Description: "Wait", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"notes": {Implementation: tool("wait")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(ctx, api.UserInput{Message: `{"tool_calls":[{"name":"wait","input":{"ms":600000}}]}`}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-executing:
	case <-ctx.Done():
		t.Fatal("no execute reached the environment")
	}
	time.Sleep(500 * time.Millisecond) // for it to arrive

	p.Signal(t, syscall.SIGTERM)
	p.WaitOutput(true, "stopping", 5*time.Second)
	if _, ok := p.Exited(time.Second); ok {
		t.Fatalf("exited with a tool running:\n%s", p.Stderr())
	}
	p.Signal(t, syscall.SIGTERM)
	code, ok := p.Exited(10 * time.Second)
	if !ok || code != 1 || !strings.Contains(p.Stderr(), "environment: terminated again: quitting") {
		t.Fatalf("after a second signal: exited %v with %d, stderr:\n%s", ok, code, p.Stderr())
	}

	var outcome string
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == api.KindToolCallEnded {
			outcome = string(ev.Data)
		}
		if ev.EventType == api.KindTurnEnded || ev.EventType == api.KindTurnFailed {
			break
		}
	}
	if !strings.Contains(outcome, `"status":"unknown"`) {
		t.Fatalf("the lost call ended %s, want unknown", outcome)
	}
}
