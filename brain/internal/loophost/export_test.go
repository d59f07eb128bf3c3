package loophost

import (
	"bytes"
	"context"
	"time"

	"github.com/tetratelabs/wazero/experimental"
)

// ScratchEntryBytes is what each entry of a scratch directory counts
// against its budget.
const ScratchEntryBytes = scratchEntryBytes

// BareInstantiate instantiates the admitted module id with nothing but the
// start function and closes it: the baseline of an activation. With
// mapped, the instance's memory comes from the host's allocator.
func (h *Host) BareInstantiate(ctx context.Context, id string, mapped bool) error {
	h.mu.RLock()
	m := h.loops.loaded[id]
	if m == nil && h.tools != nil {
		m = h.tools.loaded[id]
	}
	h.mu.RUnlock()
	if mapped {
		alloc, release := memoryAllocator()
		defer release()
		ctx = experimental.WithMemoryAllocator(ctx, alloc)
	}
	mod, err := h.rt.InstantiateModule(ctx, m.cm, h.base)
	if err != nil {
		return err
	}
	return mod.Close(ctx)
}

// InitialMemory compiles module b as it is, instantiates it without
// running any start function and answers a copy of its linear memory: what
// its data segments leave there.
func (h *Host) InitialMemory(ctx context.Context, b []byte) ([]byte, error) {
	cm, err := h.rt.CompileModule(ctx, b)
	if err != nil {
		return nil, err
	}
	defer cm.Close(ctx)
	mod, err := h.rt.InstantiateModule(ctx, cm, h.base.WithStartFunctions())
	if err != nil {
		return nil, err
	}
	defer mod.Close(ctx)
	mem := mod.Memory()
	if mem == nil {
		return nil, nil
	}
	buf, _ := mem.Read(0, mem.Size())
	return bytes.Clone(buf), nil
}

// CoalesceData is coalesceData.
func CoalesceData(b []byte) ([]byte, bool) { return coalesceData(b) }

// BareAsGiven compiles module b exactly as given (its data segments not
// merged) and answers a function that instantiates it with nothing but the
// start function and closes it: the baseline of the module as wazero
// alone would run it.
func (h *Host) BareAsGiven(ctx context.Context, b []byte) (func(context.Context) error, error) {
	cm, err := h.rt.CompileModule(ctx, b)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		mod, err := h.rt.InstantiateModule(ctx, cm, h.base)
		if err != nil {
			return err
		}
		return mod.Close(ctx)
	}, nil
}

// CheckCounts is checkCounts.
func CheckCounts(b []byte) error { return checkCounts(b) }

// DataWithinMemory is dataWithinMemory.
func DataWithinMemory(b []byte) error { return dataWithinMemory(b) }

// MaxOpenFiles is the number of files one Tool invocation may hold open.
const MaxOpenFiles = maxOpenFiles

// ElementsWithinTables is elementsWithinTables.
func ElementsWithinTables(b []byte) error { return elementsWithinTables(b) }

// SetLookupBound sets the bound of a lookup of a module by id (Func,
// Resolve, ParseToolImplementation) for the rest of the test.
func SetLookupBound(t interface{ Cleanup(func()) }, d time.Duration) {
	old := lookupBound
	lookupBound = d
	t.Cleanup(func() { lookupBound = old })
}
