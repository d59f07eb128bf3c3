package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

type harness struct {
	t      *testing.T
	dir    string
	store  journal.Store
	engine *Engine
	envs   *fakeEnvs
	secret *MemSecrets
}

// newHarness opens a real file journal in a temp dir and an engine on it.
func newHarness(t *testing.T, cfg Config, envs map[string]string) *harness {
	t.Helper()
	dir := t.TempDir()
	return openHarness(t, dir, cfg, envs)
}

func openHarness(t *testing.T, dir string, cfg Config, envs map[string]string) *harness {
	t.Helper()
	store, err := journal.OpenFileStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, store: store, envs: newFakeEnvs(envs), secret: NewMemSecrets()}
	cfg.Store = store
	if cfg.Environments == nil {
		cfg.Environments = h.envs
	}
	if cfg.Secrets == nil {
		cfg.Secrets = h.secret
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.engine = e
	h.envs.engine = e
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if h.engine != nil {
		_ = h.engine.Close(ctx)
		h.engine = nil
	}
	if h.store != nil {
		_ = h.store.Close()
		h.store = nil
	}
}

func (h *harness) create(req api.CreateSessionRequest) string {
	h.t.Helper()
	if req.Model.Provider == "" {
		req.Model = api.ModelConfig{Provider: "scripted", Name: "test", APIKey: "sk-test-secret"}
	}
	sum, err := h.engine.Create(context.Background(), "", req)
	if err != nil {
		h.t.Fatal(err)
	}
	if sum.Status != api.StatusIdle {
		h.t.Fatalf("created session is %s", sum.Status)
	}
	return sum.SessionID
}

// records reads every journal record of a session.
func (h *harness) records(id string) []journal.Record {
	h.t.Helper()
	var out []journal.Record
	for {
		recs, err := h.store.Read(context.Background(), id, uint64(len(out)), 0, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(recs) == 0 {
			return out
		}
		out = append(out, recs...)
	}
}

func kinds(recs []journal.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Kind
	}
	return out
}

func ofKind(recs []journal.Record, kind string) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// waitEvent follows the session's events until one of kind commits and
// returns it.
func (h *harness) waitEvent(id string, after uint64, kind string) api.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub, err := h.engine.Subscribe(ctx, id, after, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	defer sub.Close()
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			h.t.Fatalf("waiting for %s: %v", kind, err)
		}
		if f.Event != nil && f.Event.EventType == kind {
			return *f.Event
		}
	}
}

func script(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// testLoops resolves {"type":"test","name":N} to loops[N].
func testLoops(loops map[string]agentloop.Func) func(context.Context, []byte) (agentloop.Func, error) {
	return func(_ context.Context, impl []byte) (agentloop.Func, error) {
		var d struct{ Type, Name string }
		if err := json.Unmarshal(impl, &d); err != nil || d.Type != "test" || loops[d.Name] == nil {
			return nil, errors.New("unknown test loop")
		}
		return loops[d.Name], nil
	}
}

func testLoop(name string) *api.Agentloop {
	return &api.Agentloop{Implementation: json.RawMessage(`{"type":"test","name":"` + name + `"}`)}
}

// echoTool declares env "box" with the given behaviour and tool "echo".
func toolSession(behaviour string) api.CreateSessionRequest {
	return api.CreateSessionRequest{
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1", Credential: "env-secret-cred"}},
		Tools: []api.Tool{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{"kind":"` + behaviour + `"}`)}}}},
	}
}

// wrappedHarness is newHarness over a real file journal that wrap wraps
// (to fail some of its calls): the harness and its engine use the
// wrapped store.
func wrappedHarness(t *testing.T, cfg Config, envs map[string]string, wrap func(journal.Store) journal.Store) *harness {
	t.Helper()
	fs, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := wrap(fs)
	h := &harness{t: t, store: store, envs: newFakeEnvs(envs), secret: NewMemSecrets()}
	cfg.Store = store
	if cfg.Environments == nil {
		cfg.Environments = h.envs
	}
	if cfg.Secrets == nil {
		cfg.Secrets = h.secret
	}
	if h.engine, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	h.envs.engine = h.engine
	t.Cleanup(h.close)
	return h
}
