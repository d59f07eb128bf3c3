package session

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// leases is an Ownership on one node, as the cluster store keeps it: Own
// answers the lease held, or takes it with the next epoch.
type leases struct {
	mu    sync.Mutex
	held  map[string]int64
	last  map[string]int64
	calls int
	// onOwn, if set, is called with the number of each Own call after it
	// took or confirmed the lease.
	onOwn func(call int)
}

func (l *leases) Own(_ context.Context, id string) (int64, error) {
	l.mu.Lock()
	ep, ok := l.held[id]
	if !ok {
		l.last[id]++
		ep = l.last[id]
		l.held[id] = ep
	}
	l.calls++
	call, on := l.calls, l.onOwn
	l.mu.Unlock()
	if on != nil {
		on(call)
	}
	return ep, nil
}

func (l *leases) Held(id string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ep, ok := l.held[id]
	return ep, ok
}

func (l *leases) Release(id string, epoch int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[id] == epoch {
		delete(l.held, id)
	}
}

// gatedNext holds the first Next of a session until gate is closed,
// telling entered when it is held.
type gatedNext struct {
	journal.Store
	once    sync.Once
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedNext) Next(ctx context.Context, id string) (uint64, error) {
	g.once.Do(func() {
		close(g.entered)
		<-g.gate
	})
	return g.Store.Next(ctx, id)
}

// TestWriteToAbsentSessionSparesItsCreation: a write to a session that
// does not exist (yet) arrives on the node just before the session's
// creation, which takes the same lease while the write looks the session
// up. The write answers not found without taking the lease from the
// creation: the session is created (neither "exists" nor a lost lease)
// and can be written to afterwards.
func TestWriteToAbsentSessionSparesItsCreation(t *testing.T) {
	own := &leases{held: map[string]int64{}, last: map[string]int64{}}
	store, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedNext{Store: store, entered: make(chan struct{}), gate: make(chan struct{})}
	h := &harness{t: t, store: store, envs: newFakeEnvs(nil), secret: NewMemSecrets()}
	if h.engine, err = New(Config{Store: g, Ownership: own, Environments: h.envs, Secrets: h.secret}); err != nil {
		t.Fatal(err)
	}
	h.envs.engine = h.engine
	t.Cleanup(h.close)
	own.onOwn = func(call int) {
		if call == 2 { // the creation's: the write goes on
			close(g.gate)
		}
	}
	ctx := context.Background()
	id := NewSessionID()
	wrote := make(chan error, 1)
	go func() {
		_, err := h.engine.Submit(ctx, id, api.UserInput{Message: "hello"})
		wrote <- err
	}()
	<-g.entered
	_, err = h.engine.Create(ctx, id, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	if err != nil {
		t.Errorf("Create of a session a write to it looked up at the same time = %v, want it created", err)
	}
	if err := <-wrote; !errors.Is(err, ErrNotFound) {
		t.Errorf("write to the session before its creation = %v, want not found", err)
	}
	if err == nil {
		if _, err := h.engine.Submit(ctx, id, api.UserInput{Message: "again"}); err != nil {
			t.Errorf("write to the created session = %v", err)
		}
	}
}
