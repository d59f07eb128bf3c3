package envbind

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestLargestResponseBound: the largest answer bound an operator can set
// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES=9223372036854775807, "set it
// high") still reads the provider's answers; the bound must not wrap
// around so that every answer reads as empty.
func TestLargestResponseBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cmd struct {
			Operation struct {
				Sequence uint64 `json:"sequence"`
			} `json:"operation"`
		}
		_ = json.NewDecoder(r.Body).Decode(&cmd)
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted()))
	}))
	defer srv.Close()
	for _, max := range []int64{math.MaxInt64, math.MaxInt64 - 1, 1 << 40} {
		b := testBinder(t, Config{MaxResponseBytes: max})
		if r, err := b.Deliver(context.Background(), op(srv.URL, 1)); err != nil || r.Type != envapi.ReceiptAccepted {
			t.Errorf("MaxResponseBytes %d: setup = %+v, %v; want accepted", max, r, err)
		}
	}
}
