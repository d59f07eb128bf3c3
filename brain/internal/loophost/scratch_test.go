package loophost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// noSpace is how a Go guest on wasip1 spells ENOSPC.
const noSpace = "No space left on device"

// A Tool's scratch directory holds at most Options.MaxScratchBytes (each
// file counting ScratchEntryBytes besides its bytes): a write, a pwrite
// or a truncate that would grow it past that fails with ENOSPC, and
// nothing beyond the budget reaches the disk. Writes within the budget
// succeed, and a removed file gives its bytes back once no open file
// holds it.
func TestToolScratchBudget(t *testing.T) {
	const budget = 1 << 20
	// room is what a single file of the scratch directory may hold.
	const room = budget - loophost.ScratchEntryBytes
	tools := t.TempDir()
	ws := t.TempDir()
	h, id := toolHost(t, loophost.Options{ToolsDir: tools, MaxScratchBytes: budget,
		FilesystemAllow: []string{ws, loophost.AllowScratch}})
	d, err := h.ParseToolImplementation(impl(id, `{"filesystem":{"scratch":true,"workspace":{"path":"`+ws+`","access":"write"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	run := func(in string) envapi.Outcome {
		t.Helper()
		return outcomeOf(t, runOp(t, h, id, loophost.ToolCall{Grants: d.Grants}, in))
	}
	value := func(in string) string {
		t.Helper()
		o := run(in)
		if o.Status != envapi.StatusOK {
			t.Fatalf("%s: outcome %+v %+v", in, o, o.Error)
		}
		var s string
		_ = json.Unmarshal(o.Value, &s)
		return s
	}
	full := func(in string) {
		t.Helper()
		o := run(in)
		if o.Status != envapi.StatusError || o.Error.Code != "write_failed" || !strings.Contains(o.Error.Message, noSpace) {
			t.Fatalf("%s: outcome %+v %+v, want write_failed (%s)", in, o, o.Error, noSpace)
		}
	}

	// Past the budget: the Tool fails with ENOSPC, and while it still runs
	// its scratch directory holds no more than the budget.
	done := make(chan envapi.Receipt, 1)
	go func() {
		done <- h.RunTool(context.Background(), loophost.ToolCall{ID: id, Grants: d.Grants,
			Input: json.RawMessage(fmt.Sprintf(`{"op":"fill","path":"/scratch/big","bytes":%d,"wait":true}`, 3*budget))})
	}()
	dir := runningScratch(t, tools, "big.filled", done)
	if n := bytesUnder(t, dir); n > budget {
		t.Errorf("the scratch directory holds %d bytes, over the budget of %d", n, budget)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := outcomeOf(t, <-done)
	if o.Status != envapi.StatusError || o.Error.Code != "write_failed" || !strings.Contains(o.Error.Message, noSpace) {
		t.Fatalf("fill past the budget: outcome %+v %+v, want write_failed (%s)", o, o.Error, noSpace)
	}

	// Within the budget.
	if v := value(fmt.Sprintf(`{"op":"fill","path":"/scratch/a","bytes":%d}`, room)); v != "filled" {
		t.Fatal(v)
	}
	// A removed or truncated file frees its bytes.
	if v := value(fmt.Sprintf(`{"op":"refill","path":"/scratch/a","bytes":%d}`, budget*3/4)); v != "refilled" {
		t.Fatal(v)
	}
	if v := value(fmt.Sprintf(`{"op":"rewrite","path":"/scratch/a","bytes":%d}`, budget*3/4)); v != "rewritten" {
		t.Fatal(v)
	}
	// ... but only once no open file holds it.
	v := value(fmt.Sprintf(`{"op":"orphan","path":"/scratch/a","bytes":%d}`, budget*3/4))
	if !strings.HasPrefix(v, "open: ") || !strings.Contains(v, noSpace+"; closed: <nil>") {
		t.Fatalf("orphan: %q, want ENOSPC through the open file and room after its close", v)
	}
	// Extending a file by truncate or by a write past its end counts
	// what it extends.
	full(fmt.Sprintf(`{"op":"truncate","path":"/scratch/a","bytes":%d}`, room+1))
	full(fmt.Sprintf(`{"op":"pwrite","path":"/scratch/a","bytes":%d}`, room))
	if v := value(fmt.Sprintf(`{"op":"truncate","path":"/scratch/a","bytes":%d}`, room)); v != "truncated" {
		t.Fatal(v)
	}
	if v := value(fmt.Sprintf(`{"op":"pwrite","path":"/scratch/a","bytes":%d}`, room-1)); v != "written" {
		t.Fatal(v)
	}
	// The budget is per invocation, and bounds the scratch directory
	// only: a workspace granted for writing is not bounded by it.
	if v := value(fmt.Sprintf(`{"op":"fill","path":"/workspace/big","bytes":%d}`, 2*budget)); v != "filled" {
		t.Fatal(v)
	}
}

// runningScratch waits until the scratch directory of the running
// invocation under tools holds the file name and answers the directory.
func runningScratch(t *testing.T, tools, name string, done <-chan envapi.Receipt) string {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(tools, "scratch", "run-*", name))
		if len(m) == 1 {
			return filepath.Dir(m[0])
		}
		select {
		case r := <-done:
			t.Fatalf("the invocation ended: %+v", r)
		default:
		}
	}
	t.Fatalf("no scratch directory holds %s", name)
	return ""
}

// bytesUnder answers the sizes of the files under dir added up.
func bytesUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A negative scratch budget is refused, naming the setting.
func TestScratchBudgetNegativeRefused(t *testing.T) {
	_, err := loophost.Open(context.Background(), loophost.Options{Dir: t.TempDir(), ToolsDir: t.TempDir(), MaxScratchBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxScratchBytes") {
		t.Fatalf("Open = %v, want a refusal naming MaxScratchBytes", err)
	}
}

// Each file or directory of a Tool's scratch directory counts
// ScratchEntryBytes against Options.MaxScratchBytes, empty or not: once
// they fill the budget, creating one more fails with ENOSPC and creates
// nothing, and removing some (or replacing one by a rename) makes room
// for as many again.
func TestToolScratchEntries(t *testing.T) {
	const budget = 16 * loophost.ScratchEntryBytes
	const entries = budget / loophost.ScratchEntryBytes
	tools := t.TempDir()
	h, id := toolHost(t, loophost.Options{ToolsDir: tools, MaxScratchBytes: budget,
		FilesystemAllow: []string{loophost.AllowScratch}})
	d, err := h.ParseToolImplementation(impl(id, `{"filesystem":{"scratch":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"file", "dir"} {
		t.Run(kind, func(t *testing.T) {
			done := make(chan envapi.Receipt, 1)
			go func() {
				done <- h.RunTool(context.Background(), loophost.ToolCall{ID: id, Grants: d.Grants,
					Input: json.RawMessage(fmt.Sprintf(`{"op":"entries","path":"/scratch/e","content":%q,"bytes":%d,"remove":4,"wait":true}`, kind, 4*entries))})
			}()
			// The marker <path>.filled is one of the entries.
			dir := runningScratch(t, tools, "e.filled", done)
			held, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) > entries {
				t.Errorf("the scratch directory holds %d entries, over the budget's %d", len(held), entries)
			}
			if err := os.WriteFile(filepath.Join(dir, "e.go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			o := outcomeOf(t, <-done)
			if o.Status != envapi.StatusOK {
				t.Fatalf("outcome %+v %+v", o, o.Error)
			}
			var v string
			_ = json.Unmarshal(o.Value, &v)
			first, again, _ := strings.Cut(v, "; ")
			if want := fmt.Sprintf("created %d: ", entries-1); !strings.HasPrefix(first, want) || !strings.HasSuffix(first, noSpace) {
				t.Errorf("first creates: %q, want %q... %s", first, want, noSpace)
			}
			if !strings.HasPrefix(again, "created 4: ") || !strings.HasSuffix(again, noSpace) {
				t.Errorf("creates after removing 4: %q, want 4 and then %s", again, noSpace)
			}
		})
	}
}
