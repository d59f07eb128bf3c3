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

// outOfBand starts a long command in a new binding's container, does
// act to that container (as someone else's docker command would) and
// answers the binding, its container, the execute's answer, and how long
// after act it came.
func outOfBand(t *testing.T, act func(ctx context.Context, h *harness, ctr string) error) (*harness, *envtest.Commands, string, envapi.Receipt, time.Duration) {
	t.Helper()
	h := newHarness(t, "")
	c := h.commands()
	name := h.allocated(c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := startLongCommand(t, ctx, h.brain, c, h.url)
	if err := act(ctx, h, name); err != nil {
		t.Fatal(err)
	}
	acted := time.Now()
	r, ok := <-answered
	took := time.Since(acted)
	if !ok {
		t.Fatal("the execute was not answered")
	}
	return h, c, name, r, took
}

// A container removed out of band (docker rm -f) while a command runs in
// it is resource_lost, reported as an observation, not a result with the
// exit status the removal's kill gave the command.
func TestContainerRemovedMidCommandIsLost(t *testing.T) {
	t.Parallel()
	h, c, name, r, took := outOfBand(t, func(ctx context.Context, h *harness, ctr string) error {
		return removeContainer(ctx, h.p.cli, ctr)
	})
	failure(t, r, envapi.CodeResourceLost)
	if !strings.Contains(r.Message, name) {
		t.Fatalf("message %q does not name the container", r.Message)
	}
	if took > killBudget/2 {
		t.Fatalf("answered %s after the container was removed", took)
	}
	if n := len(h.brain.Filter(func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && strings.Contains(string(call.Input), envapi.CodeResourceLost)
	})); n == 0 {
		t.Fatal("no resource_lost observation was reported")
	}
	// It stays lost: nothing is re-created.
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat f"}), nil)), envapi.CodeResourceLost)
	if ctrs, _ := h.bindingResources(c); ctrs != 0 {
		t.Fatalf("after the loss: %d containers, want none", ctrs)
	}
}

// A container stopped out of band while a command runs in it (docker
// kill, an Engine shutting it down) ends the command: its execute answers
// at once with the signal's exit status, without spending the kill's
// budget on a container in which nothing runs any more.
func TestContainerStoppedMidCommandAnswersAtOnce(t *testing.T) {
	t.Parallel()
	h, c, _, r, took := outOfBand(t, func(ctx context.Context, h *harness, ctr string) error {
		return h.p.cli.ContainerKill(ctx, ctr, "KILL")
	})
	if r.Type != envapi.ReceiptResult {
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

// A command that a signal kills in a container that keeps running is a
// result with the signal's exit status, and the binding works on.
func TestCommandKilledBySignalIsAResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.allocated(c)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo before; kill -9 $$"}), nil))
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("execute = %+v, want a result", r)
	}
	var out toolset.CommandOutput
	if err := json.Unmarshal(r.Output, &out); err != nil || out.ExitCode != 137 || out.Stdout != "before\n" {
		t.Fatalf("command = %s, want exit status 137 after its output", r.Output)
	}
	if out := h.shell(c, "cat f"); out.Stdout != "kept\n" {
		t.Fatalf("execute after the killed command = %+v", out)
	}
}
