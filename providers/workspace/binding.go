package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fsutil"
)

var timeNow = time.Now

// syncDir fsyncs a directory (fsutil.SyncDir); a test replaces it to see
// which directories an allocation makes durable before its state says so.
var syncDir = fsutil.SyncDir

// space is an allocated workspace directory.
type space struct {
	path string
	id   identity // of the directory allocated
	dir  string   // record.Dir it was allocated for
	// grow serializes the writes and edits that measure the workspace
	// against its limits, so that writes arriving together cannot each
	// fit alone and together go beyond them.
	grow *growLock
}

// binding is one set-up binding.
type binding struct {
	p   *Provider
	key string

	mu     sync.Mutex
	rec    record // guarded by mu
	cfg    BindingConfig
	active int  // running executes
	gone   bool // torn down
	// removed is closed once the teardown has removed the workspace.
	removed chan struct{}
	lazy    envsdk.Lazy[*space]
}

// restore rebuilds a binding from its persisted state.
func (p *Provider) restore(rec *record) (*binding, error) {
	b := &binding{p: p, key: rec.Key, rec: *rec}
	if len(rec.Config) > 0 {
		if err := json.Unmarshal(rec.Config, &b.cfg); err != nil {
			return nil, fmt.Errorf("decode configuration: %w", err)
		}
	}
	switch rec.Phase {
	case phaseNew, phaseLost:
	case phaseReady:
		sp := &space{path: b.dirPath(), id: rec.identity(), dir: rec.Dir, grow: newGrowLock()}
		_, _ = b.lazy.Get(context.Background(), func(context.Context) (*space, error) { return sp, nil })
	case phaseFailed:
		msg := rec.Error
		_, _ = b.lazy.Get(context.Background(), func(context.Context) (*space, error) {
			return nil, envsdk.Failf(envapi.CodeAllocationFailed, "allocation failed: %s (call reset to try again)", msg)
		})
	default:
		return nil, fmt.Errorf("unknown phase %q", rec.Phase)
	}
	return b, nil
}

// dirPath is the workspace directory of the current record. Callers hold
// b.mu or own the binding exclusively.
func (b *binding) dirPath() string { return filepath.Join(b.p.wsRoot, b.rec.Dir) }

// tornDown is the failure of an operation on a binding torn down.
func tornDown(key string) error {
	return envsdk.Failf(envapi.CodeUnavailable, "binding %s was torn down", key)
}

// isTornDown reports whether err is tornDown's failure.
func isTornDown(err error) bool {
	var e *envsdk.Error
	return errors.As(err, &e) && e.Code == envapi.CodeUnavailable
}

// begin admits an execute; end releases it.
func (b *binding) begin() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return tornDown(b.key)
	}
	b.active++
	return nil
}

func (b *binding) end() {
	b.mu.Lock()
	b.active--
	b.mu.Unlock()
}

// workspace returns the allocated workspace, allocating it on first use,
// and checks that it is still the directory that was allocated.
func (b *binding) workspace(c *envsdk.Ctx) (*space, error) {
	b.mu.Lock()
	phase, why := b.rec.Phase, b.rec.Error
	b.mu.Unlock()
	if phase == phaseLost {
		return nil, envsdk.Failf(envapi.CodeResourceLost, "the workspace was lost: %s (call reset to allocate a new one)", why)
	}
	sp, err := b.lazy.Get(c.Context(), b.allocate)
	if err != nil {
		return nil, err
	}
	if err := b.verify(c, sp); err != nil {
		return nil, err
	}
	return sp, nil
}

// allocate creates the workspace directory. It runs once per binding
// generation, shared by concurrent first executes. It may run after the
// executes that started it gave up, and so after a teardown or once
// Close has begun: then it creates nothing.
func (b *binding) allocate(context.Context) (*space, error) {
	leave, err := b.p.hold()
	if err != nil {
		return nil, err
	}
	defer leave()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return nil, tornDown(b.key)
	}
	dir := b.rec.Dir
	path := b.dirPath()
	sp, err := b.mkdir(path)
	if err != nil {
		b.rec.Phase, b.rec.Error = phaseFailed, err.Error()
		if serr := b.p.store.save(&b.rec); serr != nil {
			err = errors.Join(err, serr)
		}
		return nil, envsdk.Failf(envapi.CodeAllocationFailed, "allocate workspace: %v", err)
	}
	sp.dir = dir
	b.rec.Phase, b.rec.Error = phaseReady, ""
	b.rec.setIdentity(sp.id)
	if err := b.p.store.save(&b.rec); err != nil {
		_ = removeTree(path)
		b.rec.Phase, b.rec.Error = phaseFailed, err.Error()
		return nil, envsdk.Failf(envapi.CodeAllocationFailed, "record workspace: %v", err)
	}
	b.p.allocations.Add(1)
	return sp, nil
}

func (b *binding) mkdir(path string) (*space, error) {
	// A directory left by an allocation interrupted before its state was
	// saved carries this binding's private name: it is ours to replace.
	if err := removeTree(path); err != nil {
		return nil, err
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		return nil, err
	}
	// The mark is kept where the file system keeps extended attributes
	// and reads back what was written; elsewhere the identity rests on
	// the inode.
	mark := newDirName() // 32 random hex digits
	if err := writeMark(path, mark); err != nil {
		mark = ""
	}
	id, markRead, err := identify(path)
	if err != nil {
		return nil, err
	}
	if !markRead || id.mark != mark {
		id.mark = ""
	}
	// The directory (with its mark) and its entry in the workspaces
	// directory are made durable before the state records the workspace
	// as ready: otherwise a power loss could keep the record and lose the
	// directory, and the fresh workspace would be reported lost.
	if err := syncDir(path); err != nil {
		return nil, err
	}
	if err := syncDir(b.p.wsRoot); err != nil {
		return nil, err
	}
	if id.weak() {
		b.p.weakIdentity.Do(func() {
			b.p.opts.Logger.Warn("the file system of the workspaces keeps no extended attributes, creation times or file handles: "+
				"a workspace directory removed and re-created behind the provider's back that gets its inode number back is taken for the workspace, not reported lost",
				"dir", b.p.wsRoot)
		})
	}
	return &space{path: path, id: id, grow: newGrowLock()}, nil
}

// verify reports resource_lost when the allocated directory is gone or was
// replaced, records the loss and reports it through the binding's reporter.
func (b *binding) verify(c *envsdk.Ctx, sp *space) error {
	id, markRead, err := identify(sp.path)
	if err == nil && sp.id.matches(id, markRead) {
		return nil
	}
	why := "the workspace directory was removed"
	if err == nil {
		why = "the workspace directory was replaced"
	} else if !errors.Is(err, os.ErrNotExist) {
		why = "the workspace directory is unusable: " + err.Error()
	}
	b.mu.Lock()
	if b.gone {
		// Torn down meanwhile: its teardown removed the directory. A
		// loss recorded now would write the state of a binding that no
		// longer exists, which a restarted provider would load.
		b.mu.Unlock()
		return tornDown(b.key)
	}
	first := b.rec.Phase != phaseLost && b.rec.Dir == sp.dir
	if first {
		b.rec.Phase, b.rec.Error = phaseLost, why
		if err := b.p.store.save(&b.rec); err != nil {
			b.p.opts.Logger.Error("record workspace loss", "binding", b.key, "error", err)
		}
	}
	b.mu.Unlock()
	if first {
		b.reportLoss(c, why)
	}
	return envsdk.Failf(envapi.CodeResourceLost, "%s (call reset to allocate a new one)", why)
}

func (b *binding) reportLoss(c *envsdk.Ctx, why string) {
	r := c.Reporter()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 10*time.Second)
	defer cancel()
	_, err := r.Result(ctx, envapi.Observation{
		Scope: envapi.ScopeResource, Resource: "workspace", Code: envapi.CodeResourceLost, Message: why,
	}, nil)
	if err != nil {
		b.p.opts.Logger.Warn("report workspace loss", "binding", b.key, "error", err)
	}
}

// drop removes the workspace, and a failed allocation or a loss, and
// starts a new generation: the next execute allocates a fresh directory.
// It fails with busy while executes run.
func (b *binding) drop() (previous string, err error) {
	previous, _, err = b.clear(false)
	return previous, err
}

// wipe is drop for a workspace that is new or allocated: a failed
// allocation or a loss stays until reset, and wipe answers false.
func (b *binding) wipe() (wiped bool, err error) {
	_, wiped, err = b.clear(true)
	return wiped, err
}

func (b *binding) clear(keepFailure bool) (previous string, cleared bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return "", false, tornDown(b.key)
	}
	if b.active > 0 {
		return "", false, envsdk.Failf(envapi.CodeBusy, "%d executes are running", b.active)
	}
	previous = b.rec.Phase
	if keepFailure && (previous == phaseFailed || previous == phaseLost) {
		return previous, false, nil
	}
	// The binding is reset on disk before its old directory is removed:
	// a provider killed during the removal restarts with the binding
	// reset, and removes what is left of the directory (sweep), rather
	// than with a workspace that lost some of its files.
	old := b.dirPath()
	next := b.rec
	next.Dir, next.Phase, next.Error = newDirName(), phaseNew, ""
	next.setIdentity(identity{})
	if err := b.p.store.save(&next); err != nil {
		return previous, false, err
	}
	b.rec = next
	b.lazy.Reset()
	// The old directory is removed without the binding's lock: the
	// binding has its next directory already, and the executes that
	// arrive meanwhile, which use that one, do not wait for the removal
	// past their deadlines.
	b.mu.Unlock()
	err = removeWorkspace(old)
	b.mu.Lock()
	if err != nil {
		return previous, false, envsdk.Failf(envapi.CodeCleanupFailed,
			"the workspace was dropped, but its directory could not be removed (the next start of the provider tries again): %v", err)
	}
	return previous, true, nil
}
