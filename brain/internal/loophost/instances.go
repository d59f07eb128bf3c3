package loophost

import (
	"errors"
	"fmt"
)

// ErrSaturated is wrapped when every instance slot is taken
// (Options.MaxInstances): the activation or invocation fails at once with
// code overloaded instead of waiting.
var ErrSaturated = errors.New("loophost: every Wasm instance slot is taken")

// acquire takes an instance slot, or fails at once when none is free; the
// answered function gives it back.
func (h *Host) acquire() (func(), error) {
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	default:
		return nil, fmt.Errorf("%w: %d instances are running (BRAIN_MAX_CORE_INSTANCES)", ErrSaturated, cap(h.slots))
	}
}

// Instances answers how many instances are alive.
func (h *Host) Instances() int { return len(h.slots) }
