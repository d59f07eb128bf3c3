// Package agentlooptest builds Go agentloops (and Tools) to WebAssembly
// and runs them in tests: it admits a module into the same Wasm host the
// server uses and runs turns through a real session engine with a file
// journal in a temporary directory and the scripted model. Every turn is
// bounded by the limits the server ships with (128 model calls, 1800 s of
// wall time, 120 s per tool call, 1 MiB of emitted events), so a loop
// that passes here is not refused by a server with the default
// configuration.
//
//	module := agentlooptest.Build(t, ".")      // GOOS=wasip1, cached per test binary
//	e := agentlooptest.Start(t)
//	id := e.Admit(t, module)
//	sid := e.Create(t, id, nil)
//	_, err := e.Send(ctx, sid, "hello") // a failed turn: *api.ApiError
//	e.Transcript(t, sid)                // the saved conversation
//
// StartWith runs turns under other limits, as a server configured with
// BRAIN_MAX_MODEL_CALLS, BRAIN_MAX_TURN_SECS and BRAIN_MAX_EMITTED_BYTES
// does, so that what a loop does at a bound is tested without reaching the
// default one:
//
//	e := agentlooptest.StartWith(t, agentlooptest.Options{Limits: agentlooptest.Limits{MaxModelCalls: 3}})
//
// Loop and Tool run a guest in the Wasm host without a session engine: the
// test gives each activation or invocation its own service table, and so
// answers and sees every service call the guest makes:
//
//	loop := agentlooptest.Loop(t, ".")      // an agentloop.Func
//	out, err := loop(ctx, services, input)  // one turn, services an agentloop.Services
//	run := agentlooptest.Tool(t, "./mytool")
//	receipt := run(ctx, toolServices, json.RawMessage(`{"path":"a.txt"}`))
package agentlooptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// BuildFlags are the go build flags of a reproducible guest build (with
// GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 and an empty GOFLAGS, GOWASM and
// GOEXPERIMENT).
var BuildFlags = []string{"-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-ldflags=-buildid="}

// BuildCommand answers the command that builds the Go package in dir to
// the Wasm module out.
func BuildCommand(ctx context.Context, dir, out string) *exec.Cmd {
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", out, ".")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=", "GOWASM=", "GOEXPERIMENT=")
	return cmd
}

var (
	buildMu sync.Mutex
	builds  = map[string][]byte{}
)

// Build builds the Go guest package in dir (see BuildCommand) and answers
// the module bytes. Builds are cached for the life of the test binary.
func Build(t testing.TB, dir string) []byte {
	t.Helper()
	b, err := BuildModule(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BuildModule is Build without a testing.TB.
func BuildModule(ctx context.Context, dir string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("agentlooptest: %w", err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := builds[abs]; ok {
		return b, nil
	}
	tmp, err := os.MkdirTemp("", "agentlooptest-")
	if err != nil {
		return nil, fmt.Errorf("agentlooptest: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "loop.wasm")
	cmd := BuildCommand(ctx, abs, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("agentlooptest: %v in %s: %w\n%s", cmd.Args, abs, err, stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("agentlooptest: %w", err)
	}
	builds[abs] = b
	return b, nil
}

// cacheDir is the compilation cache the engines of all tests share:
// compiling a Go guest takes seconds (a minute under -race), so it
// outlives the test run, as the go build cache does. wazero keys it by its
// version and the module bytes.
func cacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "brain", "agentlooptest")
}

// Engine is a session engine whose sessions may run admitted Wasm loops.
type Engine struct {
	dir    string
	limits session.Limits
	host   *loophost.Host
	store  *journal.FileStore
	engine *session.Engine
}

// Limits bound every turn of an Engine as the server's settings of the same
// names do. A zero field keeps the server's default; a negative one removes
// the bound.
type Limits struct {
	// MaxModelCalls bounds the model calls of a turn; the next one fails
	// it with model_call_limit (BRAIN_MAX_MODEL_CALLS, default 128).
	MaxModelCalls int
	// MaxTurn bounds a turn's wall time; expiry cancels the turn, which
	// fails with timeout (BRAIN_MAX_TURN_SECS, default 1800 s).
	MaxTurn time.Duration
	// MaxEmittedBytes bounds the serialized kinds and payloads of the
	// events a turn emits; the emission past it fails with emit_limit
	// (BRAIN_MAX_EMITTED_BYTES, default 1 MiB).
	MaxEmittedBytes int64
}

// Options configure an Engine.
type Options struct {
	// Limits bound every turn.
	Limits Limits
}

// Start opens an engine over a temporary directory, with the limits the
// server ships with; it is closed when the test ends.
func Start(t testing.TB) *Engine {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options: turns run under opts.Limits.
func StartWith(t testing.TB, opts Options) *Engine {
	t.Helper()
	e := &Engine{dir: t.TempDir(), limits: opts.Limits.session()}
	e.open(t)
	t.Cleanup(func() { e.close(t) })
	return e
}

// session answers the engine's limits: l over the server's defaults.
func (l Limits) session() session.Limits {
	out := session.DefaultLimits()
	pick := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	out.MaxModelCalls = int(pick(int64(l.MaxModelCalls), int64(out.MaxModelCalls)))
	out.MaxTurn = time.Duration(pick(int64(l.MaxTurn), int64(out.MaxTurn)))
	out.MaxEmittedBytes = pick(l.MaxEmittedBytes, out.MaxEmittedBytes)
	return out
}

func (e *Engine) open(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	host, err := loophost.Open(ctx, loophost.Options{Dir: filepath.Join(e.dir, "agentloops"), CacheDir: cacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	store, err := journal.OpenFileStore(filepath.Join(e.dir, "sessions"), nil)
	if err != nil {
		_ = host.Close(ctx)
		t.Fatal(err)
	}
	eng, err := session.New(session.Config{Store: store, Loops: host.Resolve, Limits: e.limits})
	if err != nil {
		_ = store.Close()
		_ = host.Close(ctx)
		t.Fatal(err)
	}
	e.host, e.store, e.engine = host, store, eng
}

func (e *Engine) close(t testing.TB) {
	t.Helper()
	if e.engine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.engine.Close(ctx); err != nil {
		t.Error(err)
	}
	if err := e.store.Close(); err != nil {
		t.Error(err)
	}
	if err := e.host.Close(ctx); err != nil {
		t.Error(err)
	}
	e.engine = nil
}

// Restart closes the engine and opens it again over the same directory:
// sessions and admitted modules are read back from disk.
func (e *Engine) Restart(t testing.TB) {
	t.Helper()
	e.close(t)
	e.open(t)
}

// Admit admits module and answers its AgentloopId; it fails the test when
// the module is rejected.
func (e *Engine) Admit(t testing.TB, module []byte) string {
	t.Helper()
	a, err := e.host.Admit(context.Background(), module)
	return admitted(t, a, err)
}

// Create creates a session (scripted model, no tools or environments)
// whose agentloop is the admitted module id with configuration.
func (e *Engine) Create(t testing.TB, id string, configuration json.RawMessage) string {
	t.Helper()
	impl, _ := json.Marshal(map[string]string{"type": loophost.ImplementationComponent, "entrypoint": "turn", "id": id})
	sum, err := e.engine.Create(context.Background(), "", api.CreateSessionRequest{
		Model:     api.ModelConfig{Provider: "scripted", Name: "scripted"},
		Agentloop: &api.Agentloop{Implementation: impl, Configuration: configuration},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum.SessionID
}

// Send runs a turn and answers its summary. A failed turn, or a send
// refused, answers the *api.ApiError (use errors.As) a client of the
// server gets: its Code is the turn's failure code (agentloop_failed,
// model_call_limit, emit_limit, timeout, ...) or the refusal's.
func (e *Engine) Send(ctx context.Context, sessionID, message string) (api.SessionSummary, error) {
	sum, err := e.engine.Send(ctx, sessionID, api.UserInput{Message: message})
	if err != nil {
		return sum, session.APIError(err)
	}
	return sum, nil
}

// Transcript answers the saved conversation of a session.
func (e *Engine) Transcript(t testing.TB, sessionID string) []api.Message {
	t.Helper()
	tr, err := e.engine.Transcript(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Messages
}

// Events answers every public event of a session.
func (e *Engine) Events(t testing.TB, sessionID string) []api.Event {
	t.Helper()
	var all []api.Event
	var after uint64
	for {
		page, err := e.engine.Events(context.Background(), sessionID, after)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Events...)
		if len(page.Events) == 0 || page.NextCursor == after {
			return all
		}
		after = page.NextCursor
	}
}

// Result answers the result of the session's last ended turn.
func (e *Engine) Result(t testing.TB, sessionID string) json.RawMessage {
	t.Helper()
	events := e.Events(t, sessionID)
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].EventType == api.KindTurnEnded {
			var d struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(events[i].Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.Result
		}
	}
	t.Fatalf("session %s has no ended turn", sessionID)
	return nil
}
