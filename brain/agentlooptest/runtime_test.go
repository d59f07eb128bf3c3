package agentlooptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
)

// TestLoopRuntime: a loop's random source is its activation's
// deterministic_seed and its clock is fixed; the time it acts on is
// logical_time_ms, the activation's start.
func TestLoopRuntime(t *testing.T) {
	e := agentlooptest.Start(t)
	id := e.Admit(t, agentlooptest.Build(t, "testdata/guest"))
	sid := e.Create(t, id, nil)
	type runtime struct {
		NowMs         int64  `json:"now_ms"`
		Random        []byte `json:"random"`
		LogicalTimeMs int64  `json:"logical_time_ms"`
		Seed          []byte `json:"seed"`
	}
	turn := func() runtime {
		t.Helper()
		before := time.Now().UnixMilli()
		if _, err := e.Send(context.Background(), sid, "runtime 32"); err != nil {
			t.Fatal(err)
		}
		var r runtime
		if err := json.Unmarshal(e.Result(t, sid), &r); err != nil {
			t.Fatal(err)
		}
		if after := time.Now().UnixMilli(); r.LogicalTimeMs < before || r.LogicalTimeMs > after {
			t.Errorf("logical_time_ms %d, want the activation's start, between %d and %d", r.LogicalTimeMs, before, after)
		}
		if len(r.Seed) != 32 || len(r.Random) != 32 {
			t.Fatalf("runtime %+v", r)
		}
		return r
	}
	a := turn()
	time.Sleep(5 * time.Millisecond)
	b := turn()
	if a.NowMs != 1640995200000 || a.NowMs != b.NowMs {
		t.Errorf("the loop's clock read %d then %d: want the fixed 2022-01-01T00:00:00Z", a.NowMs, b.NowMs)
	}
	if bytes.Equal(a.Seed, b.Seed) || bytes.Equal(a.Random, b.Random) {
		t.Errorf("two activations share a seed or random bytes: %+v, %+v", a, b)
	}
}
