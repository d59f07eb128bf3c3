package docker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A write stopped part way, while its content goes to the temporary file
// that replaces the target whole, answers cancelled, leaves the target as
// it was, and leaves no temporary file in the workspace.
func TestWriteStoppedPartWayLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	h, hold := stdinHoldingHarness(t)
	c := h.commands()
	h.setup(c, "")
	write := func(content string) envapi.Command {
		return c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "f", Content: content}), nil)
	}
	if r := h.post(write("old\n")); r.Type != envapi.ReceiptResult {
		t.Fatalf("write = %+v", r)
	}
	// temporary answers the workspace's temporary files of writes.
	temporary := func() []string {
		t.Helper()
		r := h.post(c.Execute(tool(toolset.ToolList), mustJSON(toolset.ListInput{Path: "."}), nil))
		var out toolset.ListOutput
		if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &out) != nil {
			t.Fatalf("list = %+v", r)
		}
		var tmp []string
		for _, e := range out.Entries {
			if strings.HasPrefix(e.Path, ".tmp-brain-write-") {
				tmp = append(tmp, e.Path)
			}
		}
		return tmp
	}

	hold.armed.Store(true)
	cmd := write(strings.Repeat("x", 256<<10))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan envapi.Receipt, 1)
	go func() {
		_, _, resp, err := envtest.Post(ctx, nil, h.url, testToken, cmd)
		var r envapi.Receipt
		if err == nil && resp != nil {
			r = resp.Receipt
		}
		done <- r
	}()
	select {
	case <-hold.held:
	case <-ctx.Done():
		t.Fatal("the write never started")
	}
	for len(temporary()) == 0 {
		select {
		case r := <-done:
			t.Fatalf("the write answered %+v before its temporary file was made", r)
		case <-ctx.Done():
			t.Fatal("the write never made its temporary file")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if r := h.post(c.Cancel(cmd.Operation.Sequence)); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel = %+v", r)
	}
	select {
	case r := <-done:
		failure(t, r, envapi.CodeCancelled)
		if strings.Contains(string(r.Details), "cleanup_error") {
			t.Fatalf("cancel with a failed cleanup: %s", r.Details)
		}
	case <-ctx.Done():
		t.Fatal("the stopped write never answered")
	}
	if tmp := temporary(); len(tmp) != 0 {
		t.Fatalf("the stopped write left %q in the workspace", tmp)
	}
	r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil))
	var out toolset.ReadOutput
	if json.Unmarshal(r.Output, &out) != nil || out.Content != "old\n" {
		t.Fatalf("read = %+v, want the old content", r)
	}
}
