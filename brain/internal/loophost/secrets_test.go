package loophost_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
)

// A Tool granted a secret that quotes it everywhere it can (stderr,
// stdout, an event, telemetry, its outcome, its error, a panic; whole,
// or cut by a bound) runs as it did: its outcome, its error's code and
// its failure are recorded as before, but the secret reaches none of
// the files the server writes (the journal, the telemetry file), the
// events, nor the captured output the host hands on.
func TestGrantedSecretsNeverRecorded(t *testing.T) {
	random := make([]byte, 12)
	_, _ = rand.Read(random)
	secret := "sekrit-" + hex.EncodeToString(random)
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "token"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var output [][]byte
	h, id := toolHost(t, loophost.Options{
		SecretAllow:    map[string]string{"api": secrets},
		MaxOutputBytes: 4096,
		Output: func(_ string, stdout, stderr []byte) {
			mu.Lock()
			defer mu.Unlock()
			output = append(output, bytes.Clone(stdout), bytes.Clone(stderr))
		},
	})

	data := t.TempDir()
	store, err := journal.OpenFileStore(filepath.Join(data, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := telemetry.OpenFile(filepath.Join(data, "telemetry.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	pipe := telemetry.New(telemetry.Options{Sink: sink})
	// The loop dispatches the Tool with the user's message as its input.
	loop := func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		rets, err := svc.Dispatch(ctx, []api.ToolInvocation{{CallID: "c1", Name: "leak", Environment: "local", Input: json.RawMessage(in.Input.Message)}})
		if err != nil {
			return api.TurnOutput{}, err
		}
		out, err := json.Marshal(rets)
		return api.TurnOutput{Result: out}, err
	}
	e, err := session.New(session.Config{Store: store, Environments: h.Environments(nil), Telemetry: pipe,
		Loops: func(context.Context, []byte) (agentloop.Func, error) { return loop, nil }})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			_ = e.Close(context.Background())
			_ = pipe.Close(context.Background())
			_ = store.Close()
		}
	}
	t.Cleanup(closeAll)
	ctx := context.Background()
	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	sum, err := e.Create(ctx, "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"type":"native"}`)},
		Environments: []api.Environment{local},
		Tools: []api.Tool{{Name: "leak", Description: "leak", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{local.Name: {Implementation: impl(id, `{"secrets":["api"]}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(loophost.SecretsPath, "api", "token")
	// Each answer, and what the session records of it; padding puts the
	// secret across the bound of the captured output (4096 bytes), of
	// the error message the SDK sends (4096) and of the stderr head in a
	// failure (2048).
	for _, c := range []struct {
		content string
		pad     int
		status  string
		code    string
	}{
		{"ok", 0, api.OutcomeOK, ""},
		{"outcome", 0, api.OutcomeFailed, "leaked"},
		{"error", 4090, api.OutcomeFailed, api.FailureToolError},
		{"panic", 2040, api.OutcomeFailed, api.FailureToolError},
		{"panic", 0, api.OutcomeFailed, api.FailureToolError},
	} {
		in, _ := json.Marshal(map[string]any{"op": "leak", "path": path, "content": c.content, "bytes": c.pad})
		before := lastSequence(t, e, sum.SessionID)
		if _, err := e.Send(ctx, sum.SessionID, api.UserInput{Message: string(in)}); err != nil {
			t.Fatalf("%s: %v", c.content, err)
		}
		o := toolOutcome(t, e, sum.SessionID, before)
		if o.Status != c.status || c.code != "" && (o.Error == nil || o.Error.Code != c.code) {
			t.Fatalf("%s: outcome %+v %+v, want %s %s", c.content, o, o.Error, c.status, c.code)
		}
		if c.content == "ok" && !strings.Contains(string(o.Value), "[redacted]") {
			t.Fatalf("ok: value %s does not say what was removed", o.Value)
		}
	}

	leaks := func(what string, b []byte) {
		t.Helper()
		for _, part := range []string{secret[:len("sekrit")], hex.EncodeToString(random)[:8]} {
			if i := bytes.Index(b, []byte(part)); i >= 0 {
				t.Errorf("%s holds the secret, or part of it: %q", what, b[max(0, i-40):min(len(b), i+40)])
				return
			}
		}
	}
	events := allEvents(t, e, sum.SessionID)
	raw, _ := json.Marshal(events)
	leaks("the events", raw)
	for _, ev := range events {
		if ev.EventType == "test.leak" && !strings.Contains(string(ev.Data), "[redacted]") {
			t.Errorf("event %s", ev.Data)
		}
	}
	mu.Lock()
	if len(output) == 0 {
		t.Error("no output was handed on")
	}
	for _, b := range output {
		leaks("the captured output", b)
	}
	mu.Unlock()
	closeAll()
	files := 0
	_ = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		leaks(p, b)
		return nil
	})
	if files < 2 {
		t.Fatalf("%d files written", files)
	}
}

func lastSequence(t *testing.T, e *session.Engine, sid string) uint64 {
	t.Helper()
	ev := allEvents(t, e, sid)
	if len(ev) == 0 {
		return 0
	}
	return ev[len(ev)-1].Sequence
}

// toolOutcome answers the outcome of the tool call recorded after
// sequence after.
func toolOutcome(t *testing.T, e *session.Engine, sid string, after uint64) api.Outcome {
	t.Helper()
	for _, ev := range allEvents(t, e, sid) {
		if ev.Sequence <= after || ev.EventType != api.KindToolCallEnded {
			continue
		}
		var d struct {
			Outcome api.Outcome `json:"outcome"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		return d.Outcome
	}
	t.Fatal("no tool_call_ended recorded")
	return api.Outcome{}
}
