package workspace

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// hugeEntries is the size of the directory big the tests below walk:
// large enough that a walk of it takes far longer than their deadlines.
const hugeEntries = 100_000

// hugeWorkspace serves a provider whose binding s1 holds the directory
// big with hugeEntries empty files. The root is in memory where the
// system offers it (/dev/shm), so that the files are made quickly.
func hugeWorkspace(t *testing.T) (*fixture, *envtest.Commands) {
	t.Helper()
	root := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "workspace-test-")
		if err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			root = dir
		}
	}
	f := newFixture(t, Options{Root: root, MaxFiles: 10 * hugeEntries})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "command", sh(fmt.Sprintf("mkdir big && cd big && seq %d | xargs touch", hugeEntries)), nil), nil)
	return f, c
}

// A tree too large to walk before the deadline: a list stops at the
// execute's deadline and answers timeout, a command's own timeout bounds
// the measure of the workspace against its limits that comes before it,
// and an inspect whose caller gave up stops measuring, so that Close does
// not wait for it. How long a whole walk takes is measured first.
func TestHugeTreeStopsAtItsDeadline(t *testing.T) {
	f, c := hugeWorkspace(t)

	// A whole list, twice: the shorter is what a list takes once the
	// tree is in the system's caches.
	whole := time.Duration(1<<63 - 1)
	for range 2 {
		start := time.Now()
		var list toolset.ListOutput
		ok(t, f.exec(c, "list", map[string]any{"path": "big"}, nil), &list)
		whole = min(whole, time.Since(start))
		if !list.Truncated {
			t.Fatalf("the list of %d entries is not truncated", len(list.Entries))
		}
	}
	start := time.Now()
	r := f.exec(c, "list", map[string]any{"path": "big"}, envtest.Millis(20))
	took := time.Since(start)
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Errorf("the list with a deadline answered %s %s (%s), want timeout", r.Type, r.Code, r.Message)
	}
	if took > whole/2 {
		t.Errorf("the list with a deadline of 20ms answered after %v; a whole list takes %v", took, whole)
	}

	// Without a deadline, the command is bounded by its own timeout only.
	r = f.exec(c, "command", map[string]any{"shell": "echo ran", "timeout_ms": 20}, nil)
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Errorf("a command with a timeout of 20ms answered %s %s %s, want timeout", r.Type, r.Code, r.Output)
	}

	start = time.Now()
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	whole = time.Since(start)
	t.Logf("inspect %v", whole)
	if in.Files != hugeEntries+1 {
		t.Fatalf("inspect counted %d entries, want %d", in.Files, hugeEntries+1)
	}
	ctx, cancel := context.WithTimeout(t.Context(), whole/10)
	defer cancel()
	if _, _, _, err := envtest.Post(ctx, nil, f.url, "secret-token", c.Call("inspect", nil)); err == nil {
		t.Fatalf("inspect answered within %v; a whole one takes %v", whole/10, whole)
	}
	start = time.Now()
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > whole/2 {
		t.Errorf("Close waited %v for an inspect given up; a whole one takes %v", took, whole)
	}
}
