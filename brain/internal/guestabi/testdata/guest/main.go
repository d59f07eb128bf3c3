// Command guest is the test loop of the guestabi tests: "concurrent N"
// has N goroutines call the host's environments service at once through
// guestabi.Call, each switched out right after its service import, and
// answers what each got.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestabi"
)

//go:wasmimport brain environments
func hostEnvironments(ptr unsafe.Pointer, n uint32) uint64

// yielding is the environments import followed by a goroutine switch,
// as the runtime may make one (to collect garbage) before the answer
// is fetched.
func yielding(ptr unsafe.Pointer, n uint32) uint64 {
	r := hostEnvironments(ptr, n)
	runtime.Gosched()
	return r
}

func init() { agentloop.Export(loop) }

func main() {}

func loop(_ context.Context, _ agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
	var n int
	if _, err := fmt.Sscanf(in.Input.Message, "concurrent %d", &n); err != nil {
		return api.TurnOutput{}, fmt.Errorf("message %q: %w", in.Input.Message, err)
	}
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Inputs of different lengths: a call that read another's
			// answer may get a part of it.
			raw := fmt.Appendf(nil, `{"caller":%d,"pad":"%*s"}`, i, i%7, "")
			status, answer, err := guestabi.Call(yielding, raw)
			switch {
			case err != nil:
				got[i] = "error: " + err.Error()
			case status != 0:
				got[i] = fmt.Sprintf("status %d: %s", status, answer)
			default:
				got[i] = string(answer)
			}
		})
	}
	wg.Wait()
	b, err := json.Marshal(got)
	return api.TurnOutput{Result: b}, err
}
