package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// refusingServices refuses every kv_read, and its telemetry notes how much
// the heap has grown since base.
type refusingServices struct {
	*fakeServices
	base  uint64
	grown int64
}

func (r *refusingServices) KVRead(context.Context, string) (json.RawMessage, bool, error) {
	return nil, false, fmt.Errorf("%w: kv_read of %s", session.ErrNotGranted, strings.Repeat("a long explanation ", 8))
}

func (r *refusingServices) Telemetry(context.Context, json.RawMessage) error {
	r.grown = int64(heapBytes()) - int64(r.base)
	return nil
}

func heapBytes() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A guest that retries a refused service call in a loop, until its
// deadline say, does not grow the host's memory with each refusal; the
// ref of its latest refusal still names that refusal.
func TestRetriedRefusalsHoldBoundedMemory(t *testing.T) {
	h := openHost(t, loophost.Options{})
	const calls = 100000
	doc := fmt.Sprintf(`{"error":{"message":"gave up","ref":%d}}`, calls)
	load := []byte{0x28, 0x02, 0x00}  // i32.load align=4 offset=0
	store := []byte{0x36, 0x02, 0x00} // i32.store align=4 offset=0
	m := rawModule{
		imports: []string{"kv_read", "telemetry", "answer"},
		pages:   1,
		alloc:   i32c(1024),
		entry: cat(
			[]byte{0x03, 0x40},                          // loop
			i32c(16), i32c(3), []byte{0x10, 0x00, 0x1a}, // kv_read("k"); drop
			i32c(0), i32c(0), load, i32c(1), []byte{0x6a}, store, // count the call at 0
			i32c(0), load, i32c(calls), []byte{0x49, 0x0d, 0x00}, // again while fewer than calls
			[]byte{0x0b},                               // end
			i32c(0), i32c(0), []byte{0x10, 0x01, 0x1a}, // telemetry(null); drop
			i64c(32<<32|int64(len(doc)))),
		data: [][]byte{active(16, `"k"`), active(32, doc)},
	}
	f, err := h.Func(context.Background(), admit(t, h, m.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	svc := &refusingServices{fakeServices: newFake()}
	svc.base = heapBytes()
	_, err = f(context.Background(), svc, input("hi"))
	var ge *loophost.GuestError
	if !errors.As(err, &ge) || !errors.Is(err, session.ErrNotGranted) {
		t.Fatalf("turn: %v, want the guest's failure with its latest refusal", err)
	}
	t.Logf("the heap grew by %d bytes over %d refused calls", svc.grown, calls)
	if svc.grown > 8<<20 {
		t.Errorf("the heap grew by %d bytes over %d refused calls, want at most %d", svc.grown, calls, 8<<20)
	}
	var code string
	if e := session.APIError(err); e != nil {
		code = e.Code
	}
	if code != api.CodeNotGranted {
		t.Errorf("turn failed with code %q, want %q", code, api.CodeNotGranted)
	}
}
