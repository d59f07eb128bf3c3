package loophost

import (
	"errors"
	"fmt"
	"testing"
)

// The latest maxKeptRefusals failed service calls answer their refs; an
// older ref, 0 and a ref not given answer none.
func TestRefusalsKeepTheLatest(t *testing.T) {
	var r refusals
	errs := make([]error, maxKeptRefusals+500)
	for i := range errs {
		errs[i] = fmt.Errorf("refusal %d", i+1)
		if ref := r.add(errs[i]); ref != uint32(i+1) {
			t.Fatalf("refusal %d got ref %d", i+1, ref)
		}
	}
	n := uint32(len(errs))
	for ref := uint32(0); ref <= n+1; ref++ {
		got := r.get(ref)
		kept := ref > 0 && ref <= n && n-ref < maxKeptRefusals
		switch {
		case kept && !errors.Is(got, errs[ref-1]):
			t.Fatalf("ref %d answers %v, want %v", ref, got, errs[ref-1])
		case !kept && got != nil:
			t.Fatalf("ref %d answers %v, want none", ref, got)
		}
	}
}
