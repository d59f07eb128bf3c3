package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

const loopsToken = "loops-example-token"

// session starts Brain in-process and the loops environment on loopback,
// and creates a session whose agentloop is implementation impl on it,
// declaring tools placed on that environment.
func session(t *testing.T, impl string, tools ...api.Tool) (*client.Session, context.Context) {
	t.Helper()
	loopsURL := conformance.ServeHandler(t, envsdk.NewHandler(loops{}, &envsdk.Options{Token: loopsToken}))
	b := braintest.Start(t, braintest.Options{Token: "operator"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	c, err := client.New(b.URL, &client.Options{Token: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "demo"},
		Environments: []api.Environment{{Name: "loops", Driver: api.DriverHTTP, URL: loopsURL, Credential: loopsToken}},
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(impl), Environment: "loops"},
		Tools:        tools,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, ctx
}

// turnResult answers the result of the session's last turn_ended.
func turnResult(t *testing.T, ctx context.Context, s *client.Session) json.RawMessage {
	t.Helper()
	var last json.RawMessage
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == api.KindTurnEnded {
			var te struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(ev.Data, &te); err != nil {
				t.Fatal(err)
			}
			last = te.Result
		}
	}
	return last
}

// TestMemoThroughBrain: each turn of the remote loop calls the session's
// model through its callback grant, saves the transcript and counts the
// turn in the session's KV, which outlives the activation.
func TestMemoThroughBrain(t *testing.T) {
	s, ctx := session(t, `{"loop":"memo"}`)
	for i, msg := range []string{"hello", "again"} {
		sum, err := s.Send(ctx, api.UserInput{Message: msg})
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("send %q: %+v %v", msg, sum, err)
		}
		want := `{"reply":"echo: ` + msg + `","turn":` + string(rune('1'+i)) + `}`
		if got := turnResult(t, ctx, s); string(got) != want {
			t.Fatalf("turn %d result %s, want %s", i+1, got, want)
		}
	}
	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range tr.Messages {
		texts = append(texts, string(m.Role)+": "+m.Text())
	}
	if got := strings.Join(texts, " | "); got != "user: hello | assistant: echo: hello | user: again | assistant: echo: again" {
		t.Fatalf("transcript %s", got)
	}
}

// TestUnknownLoopFailsTheTurn: an implementation the registry does not
// name is refused as unsupported, and the turn fails as agentloop_failed.
func TestUnknownLoopFailsTheTurn(t *testing.T) {
	s, ctx := session(t, `{"loop":"nope"}`)
	_, err := s.Send(ctx, api.UserInput{Message: "hello"})
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.FailureAgentloopFailed || !strings.Contains(ae.Message, "unsupported") {
		t.Fatalf("send = %v, want agentloop_failed naming unsupported", err)
	}
}

// TestRun: the command needs a token and binds loopback only.
func TestRun(t *testing.T) {
	for _, args := range [][]string{
		{"--listen", "127.0.0.1:0"},
		{"--listen", "0.0.0.0:0", "--token", "t"},
		{"--listen", "192.0.2.1:8091", "--token", "t"},
	} {
		t.Setenv("LOOPS_TOKEN", "")
		if err := run(context.Background(), args, &braintest.Buffer{}, &braintest.Buffer{}); err == nil {
			t.Errorf("run %v succeeded", args)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &braintest.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--token", "t"}, out, &braintest.Buffer{})
	}()
	url := braintest.WaitLine(t, out, "agentloops serving on ")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("serving on %q", url)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
}
