package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// downShared is a cluster's module store that, while down, fails every
// read as an unreachable database does.
type downShared struct {
	mu   sync.Mutex
	mods map[string][]byte
	down bool
}

func (s *downShared) PutModule(_ context.Context, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mods == nil {
		s.mods = map[string][]byte{}
	}
	s.mods[id] = append([]byte(nil), b...)
	return id, nil
}

func (s *downShared) SharedModule(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, false, fmt.Errorf("downShared: %w", journal.Refusal("database unavailable"))
	}
	b, ok := s.mods[id]
	return b, ok, nil
}

func (s *downShared) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// loopHostFixture serves sessions whose agentloops the host in cur
// resolves, so that a test can replace the host between requests.
func loopHostFixture(t *testing.T, cur *atomic.Pointer[loophost.Host]) *fixture {
	t.Helper()
	loops := func(ctx context.Context, impl []byte) (agentloop.Func, error) { return cur.Load().Resolve(ctx, impl) }
	return newEngineFixture(t, Options{}, session.Config{Loops: loops}, 0)
}

func openLoopHost(t *testing.T, opts loophost.Options) *loophost.Host {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	h, err := loophost.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func createWithLoop(f *fixture, key, id string) (int, api.ApiError, []byte) {
	f.t.Helper()
	body := `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_component","entrypoint":"turn","id":"` + id + `"}}}`
	st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", key)
	var e api.ApiError
	_ = json.Unmarshal(b, &e)
	return st, e, b
}

// A create naming an admitted agentloop while the Wasm host is closed
// (the server is stopping) is refused as the server being unavailable:
// 503 overloaded, retryable, and its idempotency key stays unused, so the
// same request succeeds once a host runs again. It is not the request's
// fault (invalid_request).
func TestCreateNamingALoopOnAClosedHostIsRetryable(t *testing.T) {
	guest := builtin.DefaultWasm()
	dir := t.TempDir()
	h := openLoopHost(t, loophost.Options{Dir: dir})
	a, err := h.Admit(context.Background(), guest)
	if err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit: %+v %v", a, err)
	}
	var cur atomic.Pointer[loophost.Host]
	cur.Store(h)
	f := loopHostFixture(t, &cur)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	st, e, b := createWithLoop(f, "c1", a.ID)
	if st != 503 || e.Code != api.CodeOverloaded || !e.Retryable {
		t.Fatalf("create naming a loop on a closed host = %d %s, want 503 retryable overloaded", st, b)
	}

	cur.Store(openLoopHost(t, loophost.Options{Dir: dir}))
	if st, _, b := createWithLoop(f, "c1", a.ID); st != 200 {
		t.Fatalf("the same create once the host is open = %d %s, want 200", st, b)
	}
}

// A create naming an agentloop admitted on another node, while the
// cluster's module store cannot be read, answers 503 overloaded
// (retryable) and leaves its idempotency key unused; the same request
// succeeds once the store answers. A module the store does not hold is
// still the request's fault: 422 invalid_request.
func TestCreateNamingALoopWhileTheSharedStoreIsDownIsRetryable(t *testing.T) {
	store := &downShared{}
	id, _ := store.PutModule(context.Background(), builtin.DefaultWasm())
	var cur atomic.Pointer[loophost.Host]
	cur.Store(openLoopHost(t, loophost.Options{Shared: store}))
	f := loopHostFixture(t, &cur)

	if st, e, b := createWithLoop(f, "u1", fmt.Sprintf("%064x", 1)); st != 422 || e.Code != api.CodeInvalidRequest || e.Retryable {
		t.Fatalf("create naming an unknown loop = %d %s, want 422 invalid_request", st, b)
	}

	store.setDown(true)
	st, e, b := createWithLoop(f, "s1", id)
	if st != 503 || e.Code != api.CodeOverloaded || !e.Retryable {
		t.Fatalf("create naming a loop while the store is down = %d %s, want 503 retryable overloaded", st, b)
	}

	store.setDown(false)
	if st, _, b := createWithLoop(f, "s1", id); st != 200 {
		t.Fatalf("the same create once the store answers = %d %s, want 200", st, b)
	}
}
