package envsdk

import (
	"sync"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxGone bounds the memory of torn-down bindings kept to refuse later
// operations on them.
const maxGone = 1 << 16

// bindings is the handler's own record of the bindings set up and torn
// down through it, so that a provider that keeps no state of its own still
// answers a duplicate setup and operations after teardown as the protocol
// requires. It is in memory: after a restart it knows nothing, and every
// operation reaches the provider.
type bindings struct {
	mu    sync.Mutex
	live  map[string]struct{} // set up (or being set up), not torn down
	gone  map[string]struct{} // torn down
	order []string            // gone, oldest first
}

func newBindings() *bindings {
	return &bindings{live: map[string]struct{}{}, gone: map[string]struct{}{}}
}

// beginSetup reserves key for a setup; it answers a failure receipt when
// key is already set up.
func (b *bindings) beginSetup(key string) (envapi.Receipt, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.live[key]; ok {
		return envapi.Failure(envapi.CodeAlreadyExists, "binding "+key+" is already set up; tear it down first", false, nil), false
	}
	b.live[key] = struct{}{}
	delete(b.gone, key)
	return envapi.Receipt{}, true
}

// endSetup keeps the reservation when the setup succeeded.
func (b *bindings) endSetup(key string, ok bool) {
	if ok {
		return
	}
	b.mu.Lock()
	delete(b.live, key)
	b.mu.Unlock()
}

// usable answers a failure receipt when key was torn down.
func (b *bindings) usable(key string) (envapi.Receipt, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.gone[key]; ok {
		return envapi.Failure(envapi.CodeUnavailable, "binding "+key+" was torn down; nothing runs on it any more", false, nil), false
	}
	return envapi.Receipt{}, true
}

// tornDown records a successful teardown of key.
func (b *bindings) tornDown(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, key)
	if _, ok := b.gone[key]; ok {
		return
	}
	b.gone[key] = struct{}{}
	b.order = append(b.order, key)
	if len(b.order) > maxGone {
		delete(b.gone, b.order[0])
		b.order = b.order[1:]
	}
}
