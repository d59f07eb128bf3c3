package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// clusterLeases is the lease table of a cluster, seen by one node: a
// session's lease is held by at most one node at a time.
type clusterLeases struct {
	mu   *sync.Mutex
	held map[string]nodeLease
	last map[string]int64
	node string
}

type nodeLease struct {
	node  string
	epoch int64
}

func newClusterLeases(nodes ...string) []*clusterLeases {
	mu, held, last := &sync.Mutex{}, map[string]nodeLease{}, map[string]int64{}
	out := make([]*clusterLeases, len(nodes))
	for i, n := range nodes {
		out[i] = &clusterLeases{mu: mu, held: held, last: last, node: n}
	}
	return out
}

func (l *clusterLeases) Own(_ context.Context, id string) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[id]; ok {
		if h.node != l.node {
			return 0, fmt.Errorf("node %s: %w", h.node, ErrOwnedElsewhere)
		}
		return h.epoch, nil
	}
	l.last[id]++
	l.held[id] = nodeLease{node: l.node, epoch: l.last[id]}
	return l.last[id], nil
}

func (l *clusterLeases) Held(id string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.held[id]
	return h.epoch, ok && h.node == l.node
}

func (l *clusterLeases) Release(id string, epoch int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.held[id]; h.node == l.node && h.epoch == epoch {
		delete(l.held, id)
	}
}

// A session whose turn could not be written (a full disk) leaves the
// node with in-memory state the journal never held. Another node that
// takes the session meanwhile and appends exactly as many records as
// that state was ahead must not make the first node take its state back:
// it reads the session from the journal, and sees what the other node
// wrote.
func TestFaultedProjectionNotReusedAfterAnotherWriter(t *testing.T) {
	var mu sync.Mutex
	read := map[string]string{}
	// "n:v" puts kv "by" = v n times, then notes what "by" reads.
	loops := map[string]agentloop.Func{"kv": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		n, v, _ := strings.Cut(in.Input.Message, ":")
		times, _ := strconv.Atoi(n)
		for range times {
			if _, err := svc.KVPut(ctx, "by", json.RawMessage(strconv.Quote(v))); err != nil {
				return api.TurnOutput{}, err
			}
		}
		got, _, err := svc.KVRead(ctx, "by")
		if err != nil {
			return api.TurnOutput{}, err
		}
		mu.Lock()
		read[in.Input.Message] = string(got)
		mu.Unlock()
		return api.TurnOutput{}, nil
	}}
	nodes := newClusterLeases("a", "b")
	h, store := refusingHarness(t, Config{Loops: testLoops(loops), Ownership: nodes[0]}, nil)
	other, err := New(Config{Store: store.Store, Loops: testLoops(loops), Ownership: nodes[1], Secrets: h.secret, Environments: h.envs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer other.Close(ctx)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("kv")})
	start, err := store.Next(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	// Node a: a turn of five records (its start, three kv_set) whose
	// writes are all refused.
	store.failing.Store(true)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "3:a"}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send on a full disk = %v, want journal.ErrWrite", err)
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("%d sessions in memory on node a after its turn failed", n)
	}

	// Node b takes the session and writes a turn of as many records.
	if _, err := other.Send(ctx, id, api.UserInput{Message: "1:b"}); err != nil {
		t.Fatal(err)
	}
	if next, _ := store.Next(ctx, id); next != start+5 {
		t.Fatalf("node b's turn ended the journal at %d, want %d", next, start+5)
	}

	// Node a takes the session back once its disk has room again.
	store.failing.Store(false)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "0:"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := read["0:"]
	mu.Unlock()
	if got != `"b"` {
		t.Fatalf("node a's loop read kv by = %s, want %q (what node b wrote): it ran on state the journal never held", got, `"b"`)
	}
	fresh, err := New(Config{Store: store.Store, ReleasedBytes: -1, Secrets: h.secret, Loops: testLoops(loops)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	want, err := fresh.Summary(ctx, id)
	if err != nil {
		t.Fatalf("the journal does not fold: %v", err)
	}
	if want.Status != api.StatusIdle {
		t.Fatalf("journal folds to %s", want.Status)
	}
	for _, r := range h.records(id)[start-1:] {
		if r.Kind == api.KindTurnFailed || r.Kind == api.KindActivationFailed {
			t.Fatalf("node a closed a turn it never wrote: %s %s in %v", r.Kind, r.Data, kinds(h.records(id)[start-1:]))
		}
	}
}
