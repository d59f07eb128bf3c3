package workspace

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// An execute that gives up (its deadline passed, it was cancelled) while
// the allocation it started has not run yet leaves that allocation to run
// on its own, possibly after the binding was torn down: it must not bring
// the binding back, neither its directory nor its state, which a restarted
// provider would load as a live binding.
func TestAllocationAfterTeardownLeavesNothing(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	b, err := f.p.lookup("s1/workspace")
	if err != nil {
		t.Fatal(err)
	}
	accepted(t, f.post(c.Teardown()))

	// The late allocation, as the goroutine envsdk.Lazy started runs it.
	if _, err := b.allocate(context.Background()); err == nil {
		t.Error("an allocation for a torn-down binding succeeded")
	}
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Errorf("workspaces after teardown: %v", dirs)
	}
	if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
		t.Errorf("state files after teardown: %v", files)
	}
	g := f.restart(Options{})
	fails(t, g.exec(c, "list", map[string]any{}, nil), envapi.CodeUnavailable)
}

// A teardown removing a large workspace holds back only its own binding:
// the other bindings' operations run meanwhile.
func TestTeardownDoesNotHoldBackOtherBindings(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := f.commands("a"), f.commands("b")
	accepted(t, f.post(a.Setup(nil)))
	accepted(t, f.post(b.Setup(nil)))
	ok(t, f.exec(a, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	ok(t, f.exec(b, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)

	release, done := f.teardownHeld(t, a)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out toolset.ReadOutput
	ok(t, f.postCtx(ctx, b.Execute(tool("read"), mustJSON(t, map[string]string{"path": "f"}), nil)), &out)
	if out.Content != "x" {
		t.Errorf("read during the other binding's teardown: %+v", out)
	}
	accepted(t, f.postCtx(ctx, f.commands("c").Setup(nil)))
	fails(t, f.postCtx(ctx, a.Setup(nil)), envapi.CodeAlreadyExists) // not torn down yet
	release()
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v, want accepted", resp)
	}
	fails(t, f.exec(a, "list", map[string]any{}, nil), envapi.CodeUnavailable)
	accepted(t, f.post(a.Teardown()))
}

// A setup saving its binding's state holds back only that binding: the
// other bindings' operations and setups run meanwhile, and a second setup
// of the binding being saved is refused, not set up twice.
func TestSetupDoesNotHoldBackOtherBindings(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := f.commands("a"), f.commands("b")
	accepted(t, f.post(b.Setup(nil)))
	ok(t, f.exec(b, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)

	saving, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	var first sync.Once
	writeState = func(path string, data []byte, perm os.FileMode) error {
		held := false
		first.Do(func() { held = true })
		if held {
			close(saving)
			<-release
		}
		return fsutil.WriteFileAtomic(path, data, perm)
	}
	defer func() {
		released.Do(func() { close(release) })
		writeState = fsutil.WriteFileAtomic
	}()
	setup := a.Setup(nil)
	done := make(chan *envapi.Response, 1)
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", setup)
		done <- resp
	}()
	<-saving

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out toolset.ReadOutput
	ok(t, f.postCtx(ctx, b.Execute(tool("read"), mustJSON(t, map[string]string{"path": "f"}), nil)), &out)
	if out.Content != "x" {
		t.Errorf("read during the other binding's setup: %+v", out)
	}
	accepted(t, f.postCtx(ctx, f.commands("c").Setup(nil)))
	fails(t, f.postCtx(ctx, a.Setup(nil)), envapi.CodeAlreadyExists)
	released.Do(func() { close(release) })
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v, want accepted", resp)
	}
	ok(t, f.exec(a, "write", map[string]string{"path": "f", "content": "y"}, nil), nil)
	fails(t, f.post(a.Setup(nil)), envapi.CodeAlreadyExists)
}

// teardownHeld posts c's teardown and answers once it is removing the
// workspace, held there until release is called (at the latest when the
// test ends); done gets the teardown's answer.
func (f *fixture) teardownHeld(t *testing.T, c *envtest.Commands) (release func(), done <-chan *envapi.Response) {
	t.Helper()
	removing, held := make(chan struct{}), make(chan struct{})
	var released sync.Once
	release = func() { released.Do(func() { close(held) }) }
	removeWorkspace = func(path string) error {
		close(removing)
		<-held
		return removeTree(path)
	}
	t.Cleanup(func() {
		release()
		removeWorkspace = removeTree
	})
	answer := make(chan *envapi.Response, 1)
	teardown := c.Teardown()
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", teardown)
		answer <- resp
	}()
	<-removing
	return release, answer
}
