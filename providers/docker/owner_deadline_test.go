package docker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// earlierAllocation sets c's binding up on h and allocates it as an
// earlier version of the provider did (the volume's root alone given to
// the profile's user, the image's files in it left to root), then closes
// h and rewrites the binding's file as that version wrote it; the next
// provider on stateDir gives the workspace to the user at the binding's
// first execute.
func earlierAllocation(t *testing.T, h *harness, c *envtest.Commands) bindingState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h.setup(c, "")
	b, err := h.p.lookup(bindingKey(c))
	if err != nil {
		t.Fatal(err)
	}
	st := b.state()
	if _, err := createResources(ctx, h.p.cli, plan{
		Profile: b.profile, ImageID: st.ImageID, Name: st.resourceName(),
		Labels: bindingLabels(h.p.instance, &st, time.Now()),
	}); err != nil {
		t.Fatalf("allocate as the earlier version did: %v", err)
	}
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	path := h.p.store.path(bindingKey(c))
	var raw map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["phase"] = phaseReady
	delete(raw, "chown")
	delete(raw, "chown_whole")
	if err := os.WriteFile(path, mustJSON(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	return st
}

// manyFilesImage is an image whose /workspace holds many files of root's,
// so that giving them to the profile's user takes a while.
func manyFilesImage(t *testing.T, tag string) string {
	t.Helper()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return buildDerivedImage(t, ctx, cli, "brain-docker-test:many-files-"+tag,
		"LABEL brain.test.variant="+tag+"\nRUN mkdir -p /workspace/d && cd /workspace/d && for i in $(seq 1 400); do mkdir $i && touch $i/a $i/b $i/c $i/d $i/e $i/f $i/g $i/h $i/i $i/j $i/k $i/l $i/m $i/n $i/o $i/p $i/q $i/r $i/s $i/t $i/u $i/v $i/w $i/x $i/y; done && chown 1000:1000 /workspace\n")
}

// earlierBinding is a binding an earlier version of the provider
// allocated (earlierAllocation) on a state directory no provider serves.
type earlierBinding struct {
	cli      *client.Client
	stateDir string
	profiles Profiles
	c        *envtest.Commands
	st       bindingState
}

// newEarlierBinding sets a binding of the default profile on img up as
// earlierAllocation does.
func newEarlierBinding(t *testing.T, img string) *earlierBinding {
	t.Helper()
	cli, _ := testEngine(t)
	e := &earlierBinding{cli: cli, stateDir: t.TempDir(), profiles: Profiles{DefaultProfileName: {Image: img}}}
	h := e.provider(t)
	e.c = h.commands()
	e.st = earlierAllocation(t, h, e.c)
	return e
}

// provider starts a provider on the binding's state directory.
func (e *earlierBinding) provider(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, e.stateDir, e.cli, e.profiles)
}

// ownerStopped is a binding an earlier version allocated on a
// manyFilesImage (tagged tag), served by a provider whose first execute,
// stopped by its deadline of 100 ms, started giving the workspace to the
// user; r is that execute's answer (timeout).
func ownerStopped(t *testing.T, tag string) (e *earlierBinding, h *harness, r envapi.Receipt) {
	t.Helper()
	e = newEarlierBinding(t, manyFilesImage(t, tag))
	h = e.provider(t)
	short := int64(100)
	r = h.post(e.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &short))
	failure(t, r, envapi.CodeTimeout)
	return e, h, r
}

// The first execute after a restart on a binding an earlier version
// allocated gives the workspace to the user first. A deadline that
// passes while it does stops the execute, which says that its command
// never started, but not the giving: it goes on and is recorded once
// done, so that a later execute with the same short deadline runs its
// command (once: the stopped one never ran).
func TestEarlierWorkspaceOwnerOutlivesTheDeadline(t *testing.T) {
	t.Parallel()
	e, h, r := ownerStopped(t, "deadline")
	c := e.c
	if !strings.Contains(r.Message, "never started") {
		t.Errorf("timeout message = %q; want it to say the command never started", r.Message)
	}
	// The workspace is given to the user even though no execute waits.
	for i := 0; ; i++ {
		st, ok, err := h.p.store.get(bindingKey(c))
		if err != nil || !ok {
			t.Fatalf("state: %v %v", ok, err)
		}
		if st.ChownWhole && st.ChownFor == "1000:1000" {
			break
		}
		if i == 600 {
			t.Fatalf("state %+v: the owner of the workspace is never recorded once the execute that started giving it stopped", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	long := int64(20000)
	r = h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "cat log 2>/dev/null; stat -c %u:%g d/400/y; echo once >> log"}), &long))
	out := h.commandOutput(r)
	if out.ExitCode != 0 || out.Stdout != "1000:1000\n" {
		t.Errorf("execute after the workspace was given = %+v; want the image's files the user's and no trace of the stopped command", out)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}

// A provider that stops while it gives an earlier version's workspace to
// the user stops the chown and does not record it done unless it was:
// the next provider gives the workspace to the user before its first
// command runs, and the command stopped before it started never runs.
func TestEarlierWorkspaceOwnerCutShortIsDoneAgain(t *testing.T) {
	t.Parallel()
	e, h, _ := ownerStopped(t, "cut")
	c := e.c
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := e.cli.ContainerInspect(context.Background(), e.st.resourceName()+"-chown"); err == nil {
		t.Errorf("the chown container is left running once the provider has stopped")
	}

	h = e.provider(t)
	out := h.shell(c, "cat log 2>/dev/null; find . ! -user 1000 | wc -l")
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "0" {
		t.Errorf("first execute of the next provider = %+v; want every file of the workspace the user's and no trace of the stopped command", out)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}

// A teardown while the workspace is given to the user stops that: it
// leaves no container and no state file behind.
func TestTeardownStopsTheEarlierWorkspaceOwner(t *testing.T) {
	t.Parallel()
	e, h, _ := ownerStopped(t, "teardown")
	c := e.c
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	if n, v := h.bindingResources(c); n != 0 || v != 0 {
		t.Errorf("after the teardown %d containers and %d volumes of the binding are left", n, v)
	}
	if _, ok, err := h.p.store.get(bindingKey(c)); ok || err != nil {
		t.Errorf("after the teardown the binding's state is kept (%v, %v)", ok, err)
	}
	if err := h.p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.p.store.get(bindingKey(c)); ok || err != nil {
		t.Errorf("after the provider stopped the binding's state is back (%v, %v)", ok, err)
	}
}

// An execute whose deadline passes while the binding's container is made
// says that its command never started (it did not: nothing was killed),
// and the container is made all the same, for the next execute.
func TestDeadlineDuringAllocationSaysTheCommandNeverStarted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t.TempDir())
	c := h.commands()
	h.setup(c, "")
	short := int64(1)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran >> log"}), &short))
	failure(t, r, envapi.CodeTimeout)
	if !strings.Contains(r.Message, "never started") || strings.Contains(r.Message, "killed") {
		t.Errorf("timeout message = %q; want it to say the command never started", r.Message)
	}
	if out := h.shell(c, "cat log 2>/dev/null; echo end"); out.Stdout != "end\n" {
		t.Errorf("the workspace after the stopped execute = %+v; want no trace of its command", out)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
}
