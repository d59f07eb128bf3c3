package envsdk

import "testing"

// The memory of dispatched operations keeps the latest maxSeen: the
// oldest is forgotten first, and a key forgotten and noted again is kept
// as new when its old note leaves.
func TestSeenIsBounded(t *testing.T) {
	h := NewHandler(Base{}, nil).(*handler)
	key := func(i int) string { return opKey("s", "e", uint64(i)) }
	h.mu.Lock()
	h.rememberLocked(key(0), false)
	h.mu.Unlock()
	h.forget(key(0)) // a failed setup
	h.mu.Lock()
	h.rememberLocked(key(1), false)
	h.rememberLocked(key(0), false) // the new attempt at its sequence
	for i := 2; i < maxSeen; i++ {
		h.rememberLocked(key(i), false)
	}
	h.mu.Unlock()
	// The first note of key 0 left with the last of these; one more and
	// the note of key 1 leaves.
	h.mu.Lock()
	h.rememberLocked(key(maxSeen), false)
	h.mu.Unlock()
	for _, tc := range []struct {
		i    int
		want bool
	}{{0, true}, {1, false}, {2, true}, {maxSeen, true}} {
		if _, ok := h.seen[key(tc.i)]; ok != tc.want {
			t.Errorf("sequence %d remembered %v, want %v", tc.i, ok, tc.want)
		}
	}
	if len(h.seen) > maxSeen || len(h.order) > maxSeen {
		t.Errorf("%d operations remembered in %d notes, want at most %d", len(h.seen), len(h.order), maxSeen)
	}
}
