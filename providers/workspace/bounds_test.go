package workspace

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// An edit holds the file in memory, so it works only on a file within the
// operator's output limit; a larger one is refused with output_limit and
// left as it was, whatever the workspace's size limit.
func TestEditRefusesFileBeyondOutputLimit(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 1000, MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	big := strings.Repeat("x", 1500) + "MARK"
	ok(t, f.exec(c, "write", map[string]string{"path": "big", "content": big}, nil), nil)
	r := f.exec(c, "edit", map[string]string{"path": "big", "old": "MARK", "new": "done"}, nil)
	fails(t, r, envapi.CodeOutputLimit)
	if !strings.Contains(r.Message, "big") || !strings.Contains(r.Message, "1000") {
		t.Errorf("message %q does not name the file and the limit", r.Message)
	}
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]any{"path": "big", "offset": 1500}, nil), &rd)
	if rd.Content != "MARK" {
		t.Errorf("the refused edit changed the file: it ends %q", rd.Content)
	}
	// A file at the limit is edited.
	ok(t, f.exec(c, "write", map[string]string{"path": "fits", "content": strings.Repeat("x", 996) + "MARK"}, nil), nil)
	ok(t, f.exec(c, "edit", map[string]string{"path": "fits", "old": "MARK", "new": "done"}, nil), nil)
}

// A read from an offset at or past the end of the file, up to the largest
// offset the input allows, answers empty content with the file's size.
func TestReadPastTheEnd(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "hello"}, nil), nil)
	for _, offset := range []int64{5, 6, 1 << 40, math.MaxInt64 - 1, math.MaxInt64} {
		var rd toolset.ReadOutput
		ok(t, f.exec(c, "read", map[string]any{"path": "f", "offset": offset}, nil), &rd)
		if rd.Content != "" || rd.Size != 5 || rd.Truncated {
			t.Errorf("read at %d: %+v, want empty content of a 5-byte file", offset, rd)
		}
	}
}

// A NUL byte cannot be passed to a program in an argument or a variable:
// the input is refused as invalid_input naming the field, and nothing runs.
func TestCommandRefusesNUL(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	for _, tc := range []struct {
		input map[string]any
		field string
	}{
		{map[string]any{"argv": []string{"touch", "ran", "a\x00b"}}, "input.argv"},
		{map[string]any{"argv": []string{"touch\x00", "ran"}}, "input.argv"},
		{map[string]any{"shell": "touch ran\x00"}, "input.shell"},
		{map[string]any{"argv": []string{"touch", "ran"}, "env": map[string]string{"V": "a\x00b"}}, "input.env"},
	} {
		r := f.exec(c, "command", tc.input, nil)
		fails(t, r, envapi.CodeInvalidInput)
		if !strings.Contains(r.Message, tc.field) {
			t.Errorf("%v: message %q does not name %s", tc.input, r.Message, tc.field)
		}
	}
	r := f.exec(c, "read", map[string]string{"path": "ran"}, nil)
	fails(t, r, envapi.CodeNotFound)
	// A NUL on standard input is data like any other.
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"wc", "-c"}, "stdin": "a\x00b"}, nil), &out)
	if strings.TrimSpace(out.Stdout) != "3" {
		t.Errorf("stdin with a NUL: %+v", out)
	}
}

type releaseOutput struct {
	Released bool
	Policy   string
}

// With the wipe policy the turn-end release empties a workspace, but it
// does not clear a failed allocation: that stays failed until reset.
func TestReleaseWipeKeepsFailedAllocation(t *testing.T) {
	f := newFixture(t, Options{Release: ReleaseWipe})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
	ws := filepath.Join(f.root, "workspaces")
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws, nil, 0o600); err != nil { // not a directory: mkdir fails
		t.Fatal(err)
	}
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeAllocationFailed)
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	var out releaseOutput
	ok(t, f.post(c.Call("release", json.RawMessage(`{"sequence": 2}`))), &out)
	if out.Released || out.Policy != ReleaseWipe {
		t.Errorf("release of a failed allocation: %+v", out)
	}
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeAllocationFailed)
	if n := f.p.allocations.Load(); n != 0 {
		t.Errorf("%d allocations while failed", n)
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Phase != phaseFailed {
		t.Errorf("inspect after release %+v", in)
	}
	ok(t, f.post(c.Call("reset", nil)), nil)
	ok(t, f.exec(c, "list", map[string]any{}, nil), nil)
}

// Nor does it clear a loss, whether found before the release or by it: a
// workspace removed behind the provider's back is reported once and is
// not silently replaced by an empty one.
func TestReleaseWipeKeepsLoss(t *testing.T) {
	for _, found := range []string{"before", "by release"} {
		t.Run(found, func(t *testing.T) {
			f := newFixture(t, Options{Release: ReleaseWipe})
			c := f.commands("s1")
			accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
			ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
			dir := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if found == "before" {
				fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
			}
			var out releaseOutput
			ok(t, f.post(c.Call("release", json.RawMessage(`{"sequence": 2}`))), &out)
			if out.Released {
				t.Errorf("release of a lost workspace: %+v", out)
			}
			fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
			if n := f.p.allocations.Load(); n != 1 {
				t.Errorf("%d allocations, want the first only", n)
			}
			reports := f.brain.Filter(func(cl envtest.Call) bool { return cl.Kind == envtest.KindReporter })
			if len(reports) != 1 {
				t.Errorf("%d reporter calls, want 1: %v", len(reports), reports)
			}
			ok(t, f.post(c.Call("reset", nil)), nil)
			fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeNotFound)
		})
	}
}
