package docker

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A GC run by another process on the state directory (the gc command)
// while a setup reads the image's /workspace from its probe container
// leaves the probe alone, though the binding had no state file when the GC
// began: the setup succeeds and learns the right owner of /workspace (the
// test image's belongs to the profile's user: no chown).
func TestGCLeavesTheProbeOfASetup(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setupHost, probing, probeGoesOn := gatedEngine(t, cli.DaemonHost(), "/archive")
	h := newHarnessOn(t, "", relayClient(t, setupHost))
	gcHost, listing, listGoesOn := gatedEngine(t, cli.DaemonHost(), "/containers/json")
	gc, err := New(Config{Profiles: h.p.profiles, StateDir: h.p.store.dir, Client: relayClient(t, gcHost)})
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	c := h.commands()

	type gcResult struct {
		rep GCReport
		err error
	}
	collected := make(chan gcResult, 1)
	go func() {
		rep, err := gc.GC(ctx, 0)
		collected <- gcResult{rep, err}
	}()
	select {
	case <-listing:
	case <-ctx.Done():
		t.Fatal("the GC never listed the containers")
	}
	answered := h.postAsync(c.Setup(nil))
	select {
	case <-probing:
	case <-ctx.Done():
		t.Fatal("the setup never read the image")
	}
	listGoesOn()
	got := <-collected
	probeGoesOn()
	r := <-answered

	if got.err != nil || len(got.rep.Containers) != 0 || len(got.rep.Volumes) != 0 {
		t.Errorf("GC during a setup = %+v, %v; want nothing removed", got.rep, got.err)
	}
	if r.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup during a GC = %+v", r)
	}
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok || st.Chown {
		t.Fatalf("state after the setup = %+v %v %v; want a binding whose volume needs no chown", st, ok, err)
	}
}

// A setup whose probe container is removed out of band while it reads the
// image's /workspace learns nothing of the image: it fails rather than
// record that /workspace is missing (and so that every volume of the
// image needs a chown), and the same setup tried again finds the owner.
func TestSetupWhoseProbeIsRemovedFails(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setupHost, probing, probeGoesOn := gatedEngine(t, cli.DaemonHost(), "/archive")
	h := newHarnessOn(t, "", relayClient(t, setupHost))
	c := h.commands()

	answered := h.postAsync(c.Setup(nil))
	select {
	case <-probing:
	case <-ctx.Done():
		t.Fatal("the setup never read the image")
	}
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		t.Fatalf("state while the setup reads the image: %v %v", ok, err)
	}
	if err := removeContainer(ctx, cli, st.resourceName()+"-probe"); err != nil {
		t.Fatal(err)
	}
	probeGoesOn()
	if r := <-answered; r.Type != envapi.ReceiptFailure {
		t.Fatalf("setup whose probe container was removed = %+v, want a failure", r)
	}

	h.setup(c, "")
	st, ok, err = h.p.store.get(bindingKey(c))
	if err != nil || !ok || st.Chown {
		t.Fatalf("state after the setup was tried again = %+v %v %v; want a binding whose volume needs no chown", st, ok, err)
	}
}

// gcHeldAtRemoval sets up a binding and allocates it, then serves its
// state directory by a second provider whose Engine relay holds the
// removal of the binding's container, and starts a GC of that provider
// with an age bound the binding exceeds. It answers once the GC has
// decided to remove the container and its request is held; release lets
// it go on, and collected answers the GC's outcome.
func gcHeldAtRemoval(t *testing.T) (h *harness, c *envtest.Commands, ctr string, release func(), collected <-chan gcOutcome) {
	t.Helper()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	first := newHarness(t, dir)
	c = first.commands()
	first.setup(c, "")
	first.shell(c, "true")
	st, ok, err := first.p.store.get(bindingKey(c))
	if err != nil || !ok {
		t.Fatalf("state of the binding: %v %v", ok, err)
	}
	info, err := cli.ContainerInspect(ctx, st.resourceName())
	if err != nil {
		t.Fatal(err)
	}
	host, removing, release := gatedEngine(t, cli.DaemonHost(), "/containers/"+info.ID)
	h = newHarnessOn(t, dir, relayClient(t, host))
	h.brain = first.brain
	h.p.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	out := make(chan gcOutcome, 1)
	go func() {
		rep, err := h.p.GC(ctx, time.Hour)
		out <- gcOutcome{rep, err}
	}()
	select {
	case <-removing:
	case <-ctx.Done():
		t.Fatal("the GC never removed the binding's container")
	}
	return h, c, st.resourceName(), release, out
}

type gcOutcome struct {
	rep GCReport
	err error
}

// An execute that arrives while a GC bounded by age removes its binding's
// resources runs nothing in the container being removed: it waits for the
// GC and answers resource_lost, rather than start a command that the
// removal kills halfway.
func TestExecuteDuringGCRemovalRunsNothing(t *testing.T) {
	t.Parallel()
	h, c, ctr, release, collected := gcHeldAtRemoval(t)
	answered := h.postAsync(c.Execute(tool(toolset.ToolCommand),
		mustJSON(toolset.CommandInput{Shell: "echo started; sleep 5; echo finished"}), nil))

	// Give the execute time to start its command, then let the GC go on.
	ran := false
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !ran; time.Sleep(20 * time.Millisecond) {
		info, err := h.p.cli.ContainerInspect(context.Background(), ctr)
		ran = err == nil && len(info.ExecIDs) > 0
	}
	release()
	got := <-collected
	r := <-answered

	if got.err != nil || len(got.rep.Containers) != 1 || len(got.rep.Volumes) != 1 {
		t.Errorf("GC = %+v, %v; want the binding's container and volume removed", got.rep, got.err)
	}
	if ran {
		t.Errorf("the execute started a command in the container the GC was removing")
	}
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeResourceLost {
		t.Fatalf("execute during the GC = %s %s %q, output %s; want failure resource_lost", r.Type, r.Code, r.Message, r.Output)
	}
}

// A teardown that arrives while a GC bounded by age removes the binding's
// resources waits for it rather than remove them beside it: both succeed,
// and nothing of the binding is left.
func TestTeardownDuringGCRemoval(t *testing.T) {
	t.Parallel()
	h, c, _, release, collected := gcHeldAtRemoval(t)
	answered := h.postAsync(c.Teardown())
	// Give the teardown time to reach the Engine, then let the GC go on.
	time.Sleep(time.Second)
	release()
	got := <-collected
	r := <-answered

	if got.err != nil || len(got.rep.Containers) != 1 || len(got.rep.Volumes) != 1 {
		t.Errorf("GC = %+v, %v; want the binding's container and volume removed", got.rep, got.err)
	}
	if r.Type != envapi.ReceiptAccepted {
		t.Errorf("teardown during the GC = %+v, want accepted", r)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Errorf("after the teardown and the GC: %d containers, %d volumes of the binding", ctrs, vols)
	}
}

// An allocation that outlives the execute that started it is left alone
// by a GC bounded by age that runs meanwhile: the binding's volume keeps
// its labels, so the teardown removes it.
func TestGCLeavesAnAllocationInFlight(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	first := newHarness(t, dir)
	c := first.commands()
	first.setup(c, "")
	host, creating, release := gatedEngine(t, cli.DaemonHost(), "/containers/create")
	h := newHarnessOn(t, dir, relayClient(t, host))
	h.brain = first.brain

	// The allocation is held creating the container, after its volume;
	// its execute gives up meanwhile.
	answered := h.postAsync(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), envtest.Millis(500)))
	select {
	case <-creating:
	case <-ctx.Done():
		t.Fatal("the allocation never created the container")
	}
	failure(t, <-answered, envapi.CodeTimeout)

	h.p.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	rep, err := h.p.GC(ctx, time.Hour)
	release()
	if err != nil || len(rep.Containers) != 0 || len(rep.Volumes) != 0 {
		t.Errorf("GC during an allocation = %+v, %v; want nothing removed", rep, err)
	}
	h.shell(c, "echo kept > f")
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		t.Fatalf("state of the binding: %v %v", ok, err)
	}
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	if _, err := cli.VolumeInspect(ctx, st.resourceName()); err == nil {
		_ = removeVolume(ctx, cli, st.resourceName())
		t.Fatalf("volume %s outlived the teardown", st.resourceName())
	}
}
