package docker

import (
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A setup that pinned the image but could not record it (the state file
// could not be written: here the provider's process may not write a file
// past the size the file has) fails and leaves nothing of itself: no
// state file, no container or volume. The same setup tried again is
// accepted, and the binding works. The provider runs in a child process,
// so that the limit on file sizes holds for it alone.
func TestSetupFailingToRecordItsImageLeavesNothing(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "unrecorded-setup")
	host, held, release := gatedEngine(t, r.cli.DaemonHost(), "/archive")
	child, url := startChild(t, r.stateDir, r.profiles, "DOCKER_HOST="+host)
	key := bindingKey(r.c)

	answered := make(chan envapi.Receipt, 1)
	go func() {
		_, body, resp, err := envtest.Post(r.ctx, nil, url, testToken, r.c.Setup(nil))
		if err != nil || resp == nil {
			t.Errorf("setup: %v: %s", err, body)
			answered <- envapi.Receipt{}
			return
		}
		answered <- resp.Receipt
	}()
	select {
	case <-held:
	case <-r.ctx.Done():
		t.Fatal("the setup never read the image")
	}
	// The setup recorded the binding and reads the image's /workspace:
	// its next write of the state file, with the image, fails.
	fi, err := os.Stat(r.probe.store.path(key))
	if err != nil {
		t.Fatalf("state file while the setup pins the image: %v", err)
	}
	old := fileSizeLimit(t, child.Process.Pid, nil)
	fileSizeLimit(t, child.Process.Pid, &syscall.Rlimit{Cur: uint64(fi.Size()), Max: old.Max})
	release()
	got := <-answered
	fileSizeLimit(t, child.Process.Pid, &old)
	if got.Type != envapi.ReceiptFailure {
		t.Fatalf("setup whose state could not be written = %+v, want a failure", got)
	}

	if _, err := os.Stat(r.probe.store.path(key)); !os.IsNotExist(err) {
		t.Errorf("state file after the failed setup: %v; want none", err)
	}
	if ctrs, vols := countLabelled(t, r.cli, bindingFilter(r.probe.Instance(), key)); ctrs != 0 || vols != 0 {
		t.Errorf("after the failed setup: %d containers, %d volumes of the binding", ctrs, vols)
	}
	if got := r.post(url, r.c.Setup(nil)); got.Type != envapi.ReceiptAccepted {
		t.Fatalf("the setup tried again = %+v, want it accepted", got)
	}
	got = r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hello > f; cat f"}), nil))
	var out toolset.CommandOutput
	if err := json.Unmarshal(got.Output, &out); err != nil || got.Type != envapi.ReceiptResult || out.Stdout != "hello\n" || out.ExitCode != 0 {
		t.Fatalf("command after the setup was tried again = %+v", got)
	}
	if got := r.post(url, r.c.Teardown()); got.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", got)
	}
}

// fileSizeLimit sets the limit on the size of the files process pid
// writes to set, unless set is nil, and answers the limit it had.
func fileSizeLimit(t *testing.T, pid int, set *syscall.Rlimit) syscall.Rlimit {
	t.Helper()
	var old syscall.Rlimit
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE),
		uintptr(unsafe.Pointer(set)), uintptr(unsafe.Pointer(&old)), 0, 0)
	if errno != 0 {
		t.Fatalf("prlimit of process %d: %v", pid, errno)
	}
	return old
}
