package loophost

import (
	"context"

	"github.com/tetratelabs/wazero/experimental"
)

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
