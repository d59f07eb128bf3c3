package docker

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
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
	answered := make(chan envapi.Receipt, 1)
	go func() {
		_, _, resp, err := envtest.Post(ctx, nil, h.url, testToken, c.Setup(nil))
		if err != nil || resp == nil {
			t.Errorf("setup: %v", err)
			answered <- envapi.Receipt{}
			return
		}
		answered <- resp.Receipt
	}()
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

	answered := make(chan envapi.Receipt, 1)
	go func() {
		_, _, resp, err := envtest.Post(ctx, nil, h.url, testToken, c.Setup(nil))
		if err != nil || resp == nil {
			t.Errorf("setup: %v", err)
			answered <- envapi.Receipt{}
			return
		}
		answered <- resp.Receipt
	}()
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
