package workspace

import (
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A write to a path thousands of directories deep, whose parents are
// looked up one by one, stops at its deadline: it answers timeout soon
// after it, leaves nothing in the workspace, and the binding takes the
// next write at once instead of after the abandoned one ends.
func TestDeepWriteStopsAtItsDeadline(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "first", "content": "1"}, nil), nil)

	deep := strings.Repeat("d/", 3000) + "f"
	const deadline = 200 * time.Millisecond
	start := time.Now()
	r := f.exec(c, "write", map[string]string{"path": deep, "content": "x"}, envtest.Millis(deadline.Milliseconds()))
	took := time.Since(start)
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("the deep write answered %s %s (%s) after %v, want timeout", r.Type, r.Code, r.Message, took)
	}
	// Generous against a loaded machine; the whole walk takes far longer.
	if took > deadline+2*time.Second {
		t.Errorf("the deep write answered %v after it started, its deadline was %v", took, deadline)
	}
	start = time.Now()
	ok(t, f.exec(c, "write", map[string]string{"path": "next", "content": "2"}, envtest.Millis(2000)), nil)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the next write waited %v", took)
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{}, nil), &list)
	if len(list.Entries) != 2 || list.Entries[0].Path != "first" || list.Entries[1].Path != "next" {
		t.Errorf("entries after the stopped write: %v", list.Entries)
	}
}
