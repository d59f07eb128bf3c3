package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// guest is the test guest (testdata/guest) built once per test binary;
// cacheDir is a compilation cache the tests' hosts share.
var (
	guest    []byte
	cacheDir string
)

func TestMain(m *testing.M) {
	var err error
	if guest, err = agentlooptest.BuildModule(context.Background(), "testdata/guest"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Compiling a Go guest takes seconds (a minute under -race), so the
	// tests share one compilation cache that outlives the run, as the go
	// build cache does. wazero keys it by its version and the module bytes.
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	cacheDir = filepath.Join(base, "brain", "loophost-test")
	os.Exit(m.Run())
}

func openHost(t testing.TB, opts loophost.Options) *loophost.Host {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir
	}
	h, err := loophost.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func admit(t testing.TB, h *loophost.Host, module []byte) string {
	t.Helper()
	a, err := h.Admit(context.Background(), module)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != loophost.StatusAdmitted {
		t.Fatalf("admission: %+v %+v", a, a.Error)
	}
	return a.ID
}

func input(msg string) api.TurnInput {
	return api.TurnInput{Input: &api.UserInput{Message: msg}, Transcript: []api.Message{}, KV: map[string]json.RawMessage{}}
}

// fakeServices is an in-memory service table.
type fakeServices struct {
	mu        sync.Mutex
	seq       uint64
	kv        map[string]json.RawMessage
	calls     []string
	models    int
	modelErr  func(n int) error
	telemetry []string
	emitted   []string
	saved     []api.Message
}

func newFake() *fakeServices { return &fakeServices{kv: map[string]json.RawMessage{}} }

func (f *fakeServices) note(m string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, m)
	f.seq++
	return f.seq
}

func (f *fakeServices) Model(_ context.Context, req api.ModelRequest) (api.ModelResult, error) {
	f.note("model")
	f.models++
	if f.modelErr != nil {
		if err := f.modelErr(f.models); err != nil {
			return api.ModelResult{}, err
		}
	}
	return api.ModelResult{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock(fmt.Sprintf("answer to %d messages", len(req.Messages)))}}, StopReason: api.StopEndTurn}, nil
}

func (f *fakeServices) Dispatch(_ context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	seq := f.note("dispatch")
	out := make([]api.ToolReturn, len(calls))
	for i, c := range calls {
		out[i] = api.ToolReturn{CallID: c.CallID, Sequence: seq, Finished: true}
	}
	return out, nil
}

func (f *fakeServices) Emit(_ context.Context, eventType string, data json.RawMessage) (uint64, error) {
	if eventType == api.KindTurnStarted {
		f.note("emit")
		return 0, fmt.Errorf("%w: %s", session.ErrReservedName, eventType)
	}
	f.emitted = append(f.emitted, eventType+" "+string(data))
	return f.note("emit"), nil
}

func (f *fakeServices) Telemetry(_ context.Context, record json.RawMessage) error {
	f.note("telemetry")
	f.telemetry = append(f.telemetry, string(record))
	return nil
}

func (f *fakeServices) Events(_ context.Context, after uint64) (api.EventPage, error) {
	f.note("events")
	return api.EventPage{Events: []api.Event{{Sequence: after + 1, EventType: "x", Data: json.RawMessage(`{}`)}, {Sequence: after + 2, EventType: "y", Data: json.RawMessage(`{}`)}}, NextCursor: after + 2}, nil
}

func (f *fakeServices) SetTranscript(_ context.Context, messages []api.Message) (uint64, error) {
	f.saved = messages
	return f.note("set_transcript"), nil
}

func (f *fakeServices) KVRead(_ context.Context, key string) (json.RawMessage, bool, error) {
	f.note("kv_read")
	v, ok := f.kv[key]
	return v, ok, nil
}

func (f *fakeServices) KVPut(_ context.Context, key string, value json.RawMessage) (uint64, error) {
	f.kv[key] = value
	return f.note("kv_put"), nil
}

func (f *fakeServices) KVDelete(_ context.Context, key string) (uint64, error) {
	delete(f.kv, key)
	return f.note("kv_delete"), nil
}

func (f *fakeServices) Environments(_ context.Context, req json.RawMessage) (json.RawMessage, error) {
	f.note("environments")
	return nil, fmt.Errorf("%w: environments %s", session.ErrNotGranted, req)
}

// defaultLoop is the embedded Wasm build of the default loop.
func defaultLoop() []byte { return builtin.DefaultWasm() }

// resolvers answers the two ways the engine names agentloop id on h: by
// its id (Func) and by a placement (Resolve).
func resolvers(h *loophost.Host, id string) map[string]func() (agentloop.Func, error) {
	return map[string]func() (agentloop.Func, error){
		"Func": func() (agentloop.Func, error) { return h.Func(context.Background(), id) },
		"Resolve": func() (agentloop.Func, error) {
			return h.Resolve(context.Background(), []byte(`{"type":"brain_component","entrypoint":"turn","id":"`+id+`"}`))
		},
	}
}

// overloadedTurn reports whether err is a retryable overloaded
// TurnError wrapping cause: what the engine records as a turn the server
// could not run now, not as a failure of the loop (agentloop_failed).
func overloadedTurn(err, cause error) bool {
	var te *session.TurnError
	return errors.As(err, &te) && te.Code == api.CodeOverloaded && te.Retryable && errors.Is(err, cause)
}
