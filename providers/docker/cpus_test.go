package docker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// hostCPUs is the CPU count the Engine reports.
func hostCPUs(t *testing.T) int {
	t.Helper()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := cli.Info(ctx)
	if err != nil || info.NCPU < 1 {
		t.Fatalf("Engine info: NCPU %d, %v", info.NCPU, err)
	}
	return info.NCPU
}

// A profile whose cpus bound is above the Engine's CPU count, which the
// Engine would refuse when the first execute creates the container, is
// refused at start: "brain env docker" does not serve it.
func TestCommandRefusesCPUsBeyondEngine(t *testing.T) {
	t.Parallel()
	_, image := testEngine(t)
	ncpu := hostCPUs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb strings.Builder
	args := []string{"--listen", "127.0.0.1:0", "--state", t.TempDir(), "--image", image, "--no-auth",
		"--cpus", strconv.Itoa(ncpu + 1)}
	got := Command(ctx, args, &out, &errb)
	if got != 2 || !strings.Contains(errb.String(), "cpus") || !strings.Contains(errb.String(), strconv.Itoa(ncpu)+" CPUs") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming cpus and the Engine's %d CPUs", got, out.String(), errb.String(), ncpu)
	}
	if strings.Contains(out.String(), "listening") {
		t.Fatalf("served a profile the Engine cannot run: %q", out.String())
	}
}

// A setup naming a profile whose cpus bound is above the Engine's CPU
// count is invalid_configuration naming the limit, and records nothing,
// also when the Engine could not be asked at the provider's start; a
// bound of all the Engine's CPUs is set up and runs.
func TestSetupRefusesCPUsBeyondEngine(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	ncpu := hostCPUs(t)
	host, _, release := gatedEngine(t, cli.DaemonHost(), "/info")
	h := newHarnessWith(t, "", relayClient(t, host), Profiles{
		"big": {Image: image, CPUs: float64(ncpu) + 0.5},
		"all": {Image: image, CPUs: float64(ncpu)},
	})

	// The Engine does not answer at start: nothing is refused then.
	sctx, scancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := h.p.CheckProfiles(sctx)
	scancel()
	if err == nil || errors.Is(err, ErrProfileBeyondEngine) {
		t.Fatalf("CheckProfiles with the Engine not answering = %v, want an error that refuses no profile", err)
	}
	release()
	if err := h.p.CheckProfiles(context.Background()); !errors.Is(err, ErrProfileBeyondEngine) ||
		!strings.Contains(err.Error(), `"big"`) || strings.Contains(err.Error(), `"all"`) {
		t.Fatalf("CheckProfiles = %v, want profile big refused, and it alone", err)
	}

	c := h.commands()
	r := h.post(c.Setup([]byte(`{"profile":"big"}`)))
	failure(t, r, envapi.CodeInvalidConfiguration)
	if !strings.Contains(r.Message, "cpus") || !strings.Contains(r.Message, strconv.Itoa(ncpu)+" CPUs") {
		t.Fatalf("message %q does not name the cpus limit of %d CPUs", r.Message, ncpu)
	}
	if _, ok, err := h.p.store.get(bindingKey(c)); ok || err != nil {
		t.Fatalf("a refused setup left state (%v, %v)", ok, err)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("a refused setup left %d containers, %d volumes", ctrs, vols)
	}

	h.setup(c, "all")
	out := h.shell(c, "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max")
	if want := strconv.Itoa(ncpu*100000) + "\n"; out.Stdout != want {
		t.Fatalf("CPU quota of a profile of all %d CPUs = %+v, want %s", ncpu, out, want)
	}
}
