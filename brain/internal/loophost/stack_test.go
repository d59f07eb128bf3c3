package loophost_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A guest that recurses without end traps with "stack overflow" when its
// call stack reaches the runtime's ceiling: the activation fails (a Tool
// call with tool_error), the host goes on, and what the stack took of the
// host's memory, outside the linear memory limit, stays within the bound
// RATIONALE.md records (about 100 MiB, half as much again while it is
// copied to grow).
func TestDeepRecursionTraps(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir(), MaxLinearMemoryBytes: 1 << 20})
	// The entrypoint (function 1) calls itself with its own arguments.
	recurse := []byte{0x20, 0, 0x20, 1, 0x10, 1}
	const stackBound = 256 << 20

	m := rawModule{pages: 1, alloc: i32c(0), entry: recurse}
	f, err := h.Func(context.Background(), admit(t, h, m.bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = f(context.Background(), newFake(), input("hi"))
	runtime.ReadMemStats(&after)
	var trap *loophost.TrapError
	if !errors.As(err, &trap) || !strings.Contains(trap.Message, "stack overflow") {
		t.Fatalf("turn: %v, want a trap saying stack overflow", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > stackBound {
		t.Errorf("the activation allocated %d MiB of the host's memory (bound %d MiB)", grew>>20, stackBound>>20)
	}

	tm := rawModule{pages: 1, alloc: i32c(0), entry: recurse, export: "run"}
	a, err := h.AdmitTool(context.Background(), tm.bytes())
	if err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit: %+v %v", a, err)
	}
	r := h.RunTool(context.Background(), loophost.ToolCall{ID: a.ID})
	if r.Type != envapi.ReceiptFailure || r.Code != api.FailureToolError || !strings.Contains(r.Message, "stack overflow") {
		t.Errorf("receipt %+v, want failure %s saying stack overflow", r, api.FailureToolError)
	}

	doc := `{"result":1}`
	ok := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(doc))), data: [][]byte{active(0, doc)}}
	if f, err = h.Func(context.Background(), admit(t, h, ok.bytes())); err != nil {
		t.Fatal(err)
	}
	if out, err := f(context.Background(), newFake(), input("hi")); err != nil || string(out.Result) != "1" {
		t.Errorf("after the overflow, turn answered %s, %v", out.Result, err)
	}
}
