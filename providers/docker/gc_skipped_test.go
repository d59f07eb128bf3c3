package docker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A GC that leaves a binding's resources because the binding is in use
// says so in its report: the binding, why, and the container and volume
// it left, both from the gc command beside the provider that serves the
// state directory and from the provider's own GC; once nothing runs
// there, a GC removes them and skips nothing.
func TestGCReportsTheBindingsItLeft(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	h := newHarness(t, stateDir)
	c := h.commands()
	ctr := h.allocated(c)

	running := startHeld(t, h, c)
	// Let the command end whatever happens below.
	defer func() {
		h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "touch go"}), nil))
	}()

	left := func(who string, rep GCReport, reason string) {
		t.Helper()
		if slices.Contains(rep.Containers, ctr) || slices.Contains(rep.Volumes, ctr) {
			t.Fatalf("%s removed %+v while an execute ran in %s", who, rep, ctr)
		}
		i := slices.IndexFunc(rep.Skipped, func(s GCSkip) bool { return s.Binding == bindingKey(c) })
		if i < 0 {
			t.Fatalf("%s report %+v does not say it left binding %s", who, rep, bindingKey(c))
		}
		if s := rep.Skipped[i]; s.Reason != reason || !slices.Equal(s.Containers, []string{ctr}) || !slices.Equal(s.Volumes, []string{ctr}) {
			t.Fatalf("%s skipped %+v, want reason %q and container and volume %s", who, s, reason, ctr)
		}
	}
	left("a gc process", gcProcess(t, stateDir, "--older-than", "1ns"), SkipInUseElsewhere)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := h.p.GC(ctx, time.Nanosecond)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	left("the provider's GC", rep, SkipInUse)

	h.shell(c, "touch go")
	if out := h.commandOutput(<-running); out.ExitCode != 0 || out.Stdout != "finished\n" {
		t.Fatalf("the execute that ran during the gc answered %+v", out)
	}
	rep = gcProcess(t, stateDir, "--older-than", "1ns")
	if !slices.Contains(rep.Containers, ctr) || !slices.Contains(rep.Volumes, ctr) || rep.Skipped == nil || len(rep.Skipped) != 0 {
		t.Fatalf("a gc process with nothing running answered %+v, want %s removed and nothing skipped", rep, ctr)
	}
}
