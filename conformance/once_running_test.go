package conformance_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// runsRepeatsInFlight refuses a repeated execute only once the first has
// answered, as a provider that records an execute when it completes
// does: a repeat that comes while the first still runs is hidden from the
// handler's own refusal of repeats by a sequence of its own, and answered
// with the original sequence.
func runsRepeatsInFlight(next http.Handler) http.Handler {
	var mu sync.Mutex
	running := map[string]int{}
	moved := uint64(0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		orig := cmd.Operation.Sequence
		if err == nil && cmd.Operation.Request.Type == envapi.RequestExecute {
			key := envsdk.BindingKey(cmd.Operation) + "/" + strconv.FormatUint(orig, 10)
			mu.Lock()
			if running[key] > 0 {
				moved++
				cmd.Operation.Sequence += moved << 40
				body, _ = json.Marshal(cmd)
			}
			running[key]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				running[key]--
				mu.Unlock()
			}()
		}
		serveMoved(w, r, next, body, orig)
	})
}
