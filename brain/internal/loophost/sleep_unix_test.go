//go:build unix

package loophost_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A Tool reads the real clock, so a sleep lasts its time; it waits in the
// host instead of spinning through the guest's scheduler, which would keep
// a core busy for the whole of it. Its deadline and a cancel still end a
// sleeping Tool.
func TestToolSleepWaitsWithoutSpinning(t *testing.T) {
	h, id := toolHost(t, loophost.Options{})
	const nap = time.Second
	before, start := cpuTime(), time.Now()
	if v := okValue(t, runOp(t, h, id, loophost.ToolCall{}, `{"op":"sleep","ms":1000}`)); v != `"slept"` {
		t.Fatalf("sleep answered %s", v)
	}
	if d := time.Since(start); d < nap {
		t.Fatalf("the sleep of %v ended after %v", nap, d)
	}
	if used := cpuTime() - before; used > nap/2 {
		t.Fatalf("a sleep of %v used %v of CPU", nap, used)
	}
	failure(t, runOp(t, h, id, loophost.ToolCall{Deadline: time.Now().Add(200 * time.Millisecond)}, `{"op":"sleep","ms":3600000}`), envapi.CodeTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	failure(t, h.RunTool(ctx, loophost.ToolCall{ID: id, Input: json.RawMessage(`{"op":"sleep","ms":3600000}`)}), envapi.CodeCancelled)
	if h.Instances() != 0 {
		t.Fatalf("%d instances left", h.Instances())
	}
}
