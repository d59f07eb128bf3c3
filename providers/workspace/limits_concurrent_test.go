package workspace

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestConcurrentWritesKeepTheSizeLimit: writes that arrive together are
// measured one after another, so together they never take the workspace
// beyond its size limit: of eight writes of 600 bytes into a 1,000-byte
// workspace exactly one is written, the others fail limit_exceeded.
func TestConcurrentWritesKeepTheSizeLimit(t *testing.T) {
	for round := range 20 {
		f := newFixture(t, Options{MaxBytes: 1000})
		c := f.commands("s" + strconv.Itoa(round))
		accepted(t, f.post(c.Setup(nil)))
		const n = 8
		receipts := make([]envapi.Receipt, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				receipts[i] = f.exec(c, "write", map[string]string{"path": "f" + strconv.Itoa(i), "content": strings.Repeat("x", 600)}, nil)
			})
		}
		wg.Wait()
		written := 0
		for _, r := range receipts {
			switch {
			case r.Type == envapi.ReceiptResult:
				written++
			case r.Type != envapi.ReceiptFailure || r.Code != CodeLimitExceeded:
				t.Fatalf("receipt %s %s: %s, want a result or %s", r.Type, r.Code, r.Message, CodeLimitExceeded)
			}
		}
		if written != 1 {
			t.Fatalf("round %d: %d writes of 600 bytes went into a workspace of 1,000 bytes, want 1", round, written)
		}
	}
}
