package docker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// streamedOutput concatenates the docker.output events of one execute,
// per stream.
func (h *harness) streamedOutput(session string, seq uint64) map[string]string {
	h.t.Helper()
	var out = map[string]*strings.Builder{"stdout": {}, "stderr": {}}
	for _, call := range h.brain.CallsFor(session, seq) {
		if call.Method != "emit" {
			continue
		}
		var in struct {
			EventType string `json:"event_type"`
			Data      chunk  `json:"data"`
		}
		if err := json.Unmarshal(call.Input, &in); err != nil || in.EventType != OutputEvent {
			h.t.Fatalf("emit %s: %v", call.Input, err)
		}
		out[in.Data.Stream].WriteString(in.Data.Data)
	}
	return map[string]string{"stdout": out["stdout"].String(), "stderr": out["stderr"].String()}
}

func TestStreamedOutputKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	// "é" written in two writes, so that it reaches the provider in two
	// frames, and a long line of it crossing the size of one event.
	long := strings.Repeat("é", 3*maxChunk/4+1)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: `printf '\303'; sleep 0.3; printf '\251\n'; cat`, Stdin: &long,
	}), nil))
	out := h.commandOutput(r)
	if want := "é\n" + long; out.Stdout != want {
		t.Fatalf("stdout = %d bytes, want %d", len(out.Stdout), len(want))
	}
	if got := h.streamedOutput(c.Session, c.Last())["stdout"]; got != out.Stdout {
		t.Fatalf("streamed stdout differs from the result's (%d bytes, want %d): starts %q", len(got), len(out.Stdout), got[:min(len(got), 16)])
	}
}
