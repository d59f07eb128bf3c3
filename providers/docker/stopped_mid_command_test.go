package docker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A container stopped out of band while a command runs in it (docker
// kill, an Engine shutting it down) ends the command: its execute answers
// at once with the signal's exit status, without spending the kill's
// budget on a container in which nothing runs any more.
func TestContainerStoppedMidCommandAnswersAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := startLongCommand(t, ctx, h.brain, c, h.url)
	if err := h.p.cli.ContainerKill(ctx, name, "KILL"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r, ok := <-answered
	took := time.Since(killed)
	if !ok || r.Type != envapi.ReceiptResult {
		t.Fatalf("execute = %+v, want a result", r)
	}
	var out toolset.CommandOutput
	if err := json.Unmarshal(r.Output, &out); err != nil || out.ExitCode != 137 {
		t.Fatalf("command = %s, want exit status 137", r.Output)
	}
	if took > killBudget/2 {
		t.Fatalf("answered %s after the container stopped", took)
	}
	// The binding works on: the container is started again.
	if out := h.shell(c, "cat f"); out.Stdout != "kept\n" {
		t.Fatalf("execute after the stop = %+v", out)
	}
}
