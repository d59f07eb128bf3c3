package docker

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// Edits of one file that run at once (an agent's parallel tool calls) each
// take effect: none reads the file before another's edit is written and
// then writes it back without that edit.
func TestConcurrentEditsAreAllKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	const n = 8
	var words []string
	for i := range n {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	if r := h.post(c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "f", Content: strings.Join(words, " ")}), nil)); r.Type != envapi.ReceiptResult {
		t.Fatalf("write = %+v", r)
	}
	var wg sync.WaitGroup
	receipts := make([]envapi.Receipt, n)
	for i := range n {
		cmd := c.Execute(tool(toolset.ToolEdit), mustJSON(toolset.EditInput{Path: "f", Old: words[i], New: strings.ToUpper(words[i])}), nil)
		wg.Go(func() { receipts[i] = h.post(cmd) })
	}
	wg.Wait()
	for i, r := range receipts {
		if r.Type != envapi.ReceiptResult {
			t.Errorf("edit %d = %s %s: %s", i, r.Type, r.Code, r.Message)
		}
	}
	var out toolset.ReadOutput
	r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil))
	if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &out) != nil {
		t.Fatalf("read = %+v", r)
	}
	if want := strings.ToUpper(strings.Join(words, " ")); out.Content != want {
		t.Errorf("after %d edits that all succeeded the file holds %q, want %q", n, out.Content, want)
	}
}
