package pythonuv

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestSetupAfterCloseIsUnavailable: a provider that is stopping answers a
// setup unavailable, as it answers an execute, rather than accepting a
// binding (and recording it in its state directory) that none of its
// operations will serve.
func TestSetupAfterCloseIsUnavailable(t *testing.T) {
	r := newRig(t, nil)
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, r.post(r.session("s1").Setup(nil)), envapi.CodeUnavailable)
	r.p.mu.Lock()
	n := len(r.p.bindings)
	r.p.mu.Unlock()
	if n != 0 {
		t.Errorf("the stopping provider holds %d bindings", n)
	}
}
