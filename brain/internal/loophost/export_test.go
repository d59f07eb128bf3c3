package loophost

import (
	"context"
)

// BareInstantiate instantiates the admitted module id with nothing but the
// start function and closes it: the baseline of an activation.
func (h *Host) BareInstantiate(ctx context.Context, id string) error {
	h.mu.RLock()
	m := h.loaded[id]
	h.mu.RUnlock()
	mod, err := h.rt.InstantiateModule(ctx, m.cm, h.base)
	if err != nil {
		return err
	}
	return mod.Close(ctx)
}
