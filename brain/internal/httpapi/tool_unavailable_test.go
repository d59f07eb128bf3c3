package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// emptyTool is the smallest Tool module a host admits: it exports its
// memory, brain_alloc and run, which answers nothing.
var emptyTool = []byte("\x00asm\x01\x00\x00\x00" +
	// types: (i32, i32) -> i64 and (i32) -> i32
	"\x01\x0c\x02\x60\x02\x7f\x7f\x01\x7e\x60\x01\x7f\x01\x7f" +
	// functions: run, brain_alloc
	"\x03\x03\x02\x00\x01" +
	// memory: one page
	"\x05\x03\x01\x00\x01" +
	// exports: memory, run, brain_alloc
	"\x07\x1e\x03\x06memory\x02\x00\x03run\x00\x00\x0bbrain_alloc\x00\x01" +
	// code: run answers 0, brain_alloc 1024
	"\x0a\x0c\x02\x04\x00\x42\x00\x0b\x05\x00\x41\x80\x08\x0b")

// hostEnvironments is the built-in environment of the host in cur, so
// that a test can replace the host between requests.
type hostEnvironments struct {
	cur *atomic.Pointer[loophost.Host]
}

var (
	_ session.Validator          = hostEnvironments{}
	_ session.PlacementValidator = hostEnvironments{}
)

func (e hostEnvironments) envs() *loophost.Environments { return e.cur.Load().Environments(nil) }

func (e hostEnvironments) Deliver(ctx context.Context, op session.Operation) (envapi.Receipt, error) {
	return e.envs().Deliver(ctx, op)
}

func (e hostEnvironments) ValidateEnvironment(env api.Environment) error {
	return e.envs().ValidateEnvironment(env)
}

func (e hostEnvironments) ValidatePlacement(env api.Environment, impl json.RawMessage) error {
	return e.envs().ValidatePlacement(env, impl)
}

// toolHostFixture serves sessions whose brain environment is the built-in
// environment of the host in cur.
func toolHostFixture(t *testing.T, cur *atomic.Pointer[loophost.Host]) *fixture {
	t.Helper()
	return newEngineFixture(t, Options{}, session.Config{Environments: hostEnvironments{cur}}, 0)
}

// createWithTool creates a session whose Tool "t" runs the Tool module id
// on the brain environment "local".
func createWithTool(f *fixture, key, id string) (int, api.ApiError, []byte) {
	f.t.Helper()
	body := `{"model":{"provider":"scripted","name":"m"},"environments":[{"name":"local","driver":"brain"}],` +
		`"tools":[{"name":"t","description":"a tool","input_schema":{"type":"object"},` +
		`"placements":{"local":{"implementation":{"type":"brain_component","entrypoint":"run","id":"` + id + `"}}}}]}`
	st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", key)
	var e api.ApiError
	_ = json.Unmarshal(b, &e)
	return st, e, b
}

// A create whose Tool is placed on an admitted Tool module while the Wasm
// host is closed (the server is stopping) is refused as a create naming an
// agentloop there is: 503 overloaded, retryable, and its idempotency key
// stays unused, so the same request succeeds once a host runs again.
func TestCreatePlacingAToolOnAClosedHostIsRetryable(t *testing.T) {
	dir, tools := t.TempDir(), t.TempDir()
	h := openLoopHost(t, loophost.Options{Dir: dir, ToolsDir: tools})
	a, err := h.AdmitTool(context.Background(), emptyTool)
	if err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit: %+v %v", a, err)
	}
	var cur atomic.Pointer[loophost.Host]
	cur.Store(h)
	f := toolHostFixture(t, &cur)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	st, e, b := createWithTool(f, "c1", a.ID)
	if st != 503 || e.Code != api.CodeOverloaded || !e.Retryable {
		t.Fatalf("create placing a Tool on a closed host = %d %s, want 503 retryable overloaded", st, b)
	}

	cur.Store(openLoopHost(t, loophost.Options{Dir: dir, ToolsDir: tools}))
	if st, _, b := createWithTool(f, "c1", a.ID); st != 200 {
		t.Fatalf("the same create once the host is open = %d %s, want 200", st, b)
	}
}

// A create whose Tool is placed on a Tool module admitted on another
// node, while the cluster's module store cannot be read, answers 503
// overloaded (retryable) and leaves its idempotency key unused; the same
// request succeeds once the store answers. A module the store does not
// hold is still the request's fault: 422 invalid_request.
func TestCreatePlacingAToolWhileTheSharedStoreIsDownIsRetryable(t *testing.T) {
	store := &downShared{}
	id, _ := store.PutModule(context.Background(), emptyTool)
	var cur atomic.Pointer[loophost.Host]
	cur.Store(openLoopHost(t, loophost.Options{ToolsDir: t.TempDir(), SharedTools: store}))
	f := toolHostFixture(t, &cur)

	if st, e, b := createWithTool(f, "u1", fmt.Sprintf("%064x", 1)); st != 422 || e.Code != api.CodeInvalidRequest || e.Retryable {
		t.Fatalf("create placing a Tool on an unknown module = %d %s, want 422 invalid_request", st, b)
	}

	store.setDown(true)
	st, e, b := createWithTool(f, "s1", id)
	if st != 503 || e.Code != api.CodeOverloaded || !e.Retryable {
		t.Fatalf("create placing a Tool while the store is down = %d %s, want 503 retryable overloaded", st, b)
	}

	store.setDown(false)
	if st, _, b := createWithTool(f, "s1", id); st != 200 {
		t.Fatalf("the same create once the store answers = %d %s, want 200", st, b)
	}
}
