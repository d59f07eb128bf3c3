package docker

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A setup that pinned the image but could not record it (the state file
// could not be written: here it may not grow past its size) fails and
// leaves nothing of itself: no state file, no container or volume. The
// same setup tried again is accepted, and the binding works.
func TestSetupFailingToRecordItsImageLeavesNothing(t *testing.T) {
	// Not parallel: the file size limit holds for the whole process.
	cli, _ := testEngine(t)
	host, held, release := gatedEngine(t, cli.DaemonHost(), "/archive")
	h := newHarnessOn(t, "", relayClient(t, host))
	c := h.commands()
	key := bindingKey(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	answered := h.postAsync(c.Setup(nil))
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the setup never read the image")
	}
	// The setup recorded the binding and reads the image's /workspace:
	// its next write of the state file, with the image, fails.
	fi, err := os.Stat(h.p.store.path(key))
	if err != nil {
		t.Fatalf("state file while the setup pins the image: %v", err)
	}
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
			t.Errorf("restore the file size limit: %v", err)
		}
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(fi.Size()), Max: limit.Max}); err != nil {
		t.Fatal(err)
	}
	release()
	r := <-answered
	restore()
	if r.Type != envapi.ReceiptFailure {
		t.Fatalf("setup whose state could not be written = %+v, want a failure", r)
	}

	if _, err := os.Stat(h.p.store.path(key)); !os.IsNotExist(err) {
		t.Errorf("state file after the failed setup: %v; want none", err)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Errorf("after the failed setup: %d containers, %d volumes of the binding", ctrs, vols)
	}
	h.setup(c, "")
	if out := h.shell(c, "echo hello > f; cat f"); out.Stdout != "hello\n" || out.ExitCode != 0 {
		t.Fatalf("command after the setup was tried again = %+v", out)
	}
}
