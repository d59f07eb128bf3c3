package docker

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// restarted closes the provider of h (its containers are left running)
// and answers a provider started again on the same state directory with
// profile as its "default".
func restarted(t *testing.T, h *harness, stateDir string, profile Profile) *harness {
	t.Helper()
	if err := h.p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cli, _ := testEngine(t)
	return newHarnessWith(t, stateDir, cli, Profiles{DefaultProfileName: profile})
}

// limitsProbe prints the container's CPU quota, memory limit and pids
// limit, one a line (cgroup v1 paths first, v2 after), then what /tmp
// and the workspace kept.
const limitsProbe = `cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max
cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max
cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max
cat /tmp/mark f`

// A profile whose memory, pids or CPU limits changed between two
// provider processes is applied to the container a binding already has,
// in place: the limits are the new profile's, and the container is the
// same one, its /tmp and workspace as they were. A CPU bound the profile
// no longer has bounds nothing any more.
func TestChangedProfileLimitsApplied(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	ncpu := hostCPUs(t)
	stateDir := t.TempDir()
	h := newHarnessWith(t, stateDir, cli, Profiles{DefaultProfileName: {Image: image, CPUs: 0.5, MemoryMB: 64, Pids: 16}})
	c := h.commands()
	ctr := h.allocated(c)
	h.shell(c, "echo on-tmp > /tmp/mark")
	if out := h.shell(c, limitsProbe); out.Stdout != "50000\n67108864\n16\non-tmp\nkept\n" {
		t.Fatalf("limits before the change = %+v", out)
	}

	h = restarted(t, h, stateDir, Profile{Image: image, CPUs: 1, MemoryMB: 96, Pids: 32})
	if out := h.shell(c, limitsProbe); out.Stdout != "100000\n100663296\n32\non-tmp\nkept\n" {
		t.Fatalf("after a restart with cpus 1, memory_mb 96 and pids 32: %+v", out)
	}
	if st, _, _ := h.p.store.get(bindingKey(c)); st == nil || st.resourceName() != ctr {
		t.Fatalf("state after the change = %+v, want the container %s kept", st, ctr)
	}

	h = restarted(t, h, stateDir, Profile{Image: image, MemoryMB: 32})
	out := h.shell(c, limitsProbe)
	lines := strings.Split(out.Stdout, "\n")
	if len(lines) != 6 || lines[1] != "33554432" || lines[2] != strconv.Itoa(DefaultPids) || lines[3] != "on-tmp" {
		t.Fatalf("after a restart with memory_mb 32 and no cpus: %+v", out)
	}
	if q, err := strconv.Atoi(lines[0]); lines[0] != "-1" && lines[0] != "max" && (err != nil || q < ncpu*100000) {
		t.Fatalf("CPU quota %q after the profile's bound was taken away, want none or all %d CPUs", lines[0], ncpu)
	}
}

// A profile whose network, workspace mount, user or /tmp size changed
// between two provider processes, which a container that exists cannot
// take, runs nothing in the binding's container: its executes answer
// unavailable naming what changed, so no command runs with the network
// or the writable workspace the operator took away. The profile given
// back, the binding works on as it was; with the change, teardown still
// removes it.
func TestChangedProfileFixedFieldsRefused(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	stateDir := t.TempDir()
	h := newHarnessWith(t, stateDir, cli, Profiles{DefaultProfileName: {Image: image}})
	c := h.commands()
	h.allocated(c)

	changed := Profile{Image: image, Network: "bridge", Workspace: WorkspaceRead, User: "1001:1001", TmpfsMB: 8}
	h = restarted(t, h, stateDir, changed)
	for range 2 {
		r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran > ran"}), nil))
		failure(t, r, envapi.CodeUnavailable)
		for _, field := range []string{"network", "workspace", "user", "tmpfs_mb"} {
			if !strings.Contains(r.Message, field) {
				t.Fatalf("message %q does not name the %s", r.Message, field)
			}
		}
	}

	h = restarted(t, h, stateDir, Profile{Image: image})
	if out := h.shell(c, "cat f; ls ran 2>&1"); !strings.HasPrefix(out.Stdout, "kept\n") || !strings.Contains(out.Stdout, "No such file") {
		t.Fatalf("with the profile given back = %+v; want the workspace as it was, without the refused command's file", out)
	}

	h = restarted(t, h, stateDir, changed)
	if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	if ctrs, vols := h.bindingResources(c); ctrs != 0 || vols != 0 {
		t.Fatalf("after teardown: %d containers, %d volumes", ctrs, vols)
	}
}

// The commands a killed provider left running are killed by a provider
// started again with another user in the profile, at its start and by a
// cancel: they run as the user the container was made with, whom the new
// profile's user could not signal.
func TestLeftoversKilledAfterUserChange(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"start", "cancel"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			r := newKillRig(t, "user-changed-"+by)
			child, url := startChild(t, r.stateDir, r.profiles)
			if rc := r.post(url, r.c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
				t.Fatalf("setup = %+v", rc)
			}
			seq := leftoverCommand(t, r, url)
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			st, ok, err := r.probe.store.get(bindingKey(r.c))
			if err != nil || !ok || st.Phase != phaseReady {
				t.Fatalf("state after the kill = %+v %v %v", st, ok, err)
			}
			if left := sleepers(t, r, st.resourceName()); len(left) != 3 {
				t.Fatalf("after the kill the command runs as %q, want its 3 sleeps", left)
			}

			h := newHarnessWith(t, r.stateDir, r.cli, Profiles{DefaultProfileName: {Image: r.image, User: "1001:1001"}})
			if by == "start" {
				if err := h.p.KillLeftovers(r.ctx); err != nil {
					t.Fatalf("KillLeftovers: %v", err)
				}
			} else if rc := h.post(r.c.Cancel(seq)); rc.Type != envapi.ReceiptAccepted {
				t.Fatalf("cancel = %+v", rc)
			}
			if left := sleepers(t, r, st.resourceName()); len(left) != 0 {
				t.Fatalf("after a restart with another user the killed provider's command runs on: %q", left)
			}
		})
	}
}

// A binding set up but not yet allocated when its profile's user changed
// (or its read workspace became writable) between two provider
// processes gets a workspace that belongs to the user its commands run
// as: nothing was written there yet, so the owner setup found for the
// former profile's user is decided again for the new one.
func TestChangedUserBeforeAllocationOwnsTheWorkspace(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	for name, before := range map[string]Profile{
		"user":      {Image: image},
		"workspace": {Image: image, Workspace: WorkspaceRead},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stateDir := t.TempDir()
			h := newHarnessWith(t, stateDir, cli, Profiles{DefaultProfileName: before})
			c := h.commands()
			h.setup(c, "")

			h = restarted(t, h, stateDir, Profile{Image: image, User: "2000:2000"})
			r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo hi > f && stat -c %u:%g . f"}), nil))
			if out := h.commandOutput(r); out.ExitCode != 0 || out.Stdout != "2000:2000\n2000:2000\n" {
				t.Fatalf("first command after the change = %+v; want the workspace and its new file owned by 2000:2000", out)
			}
			if r := h.post(c.Execute(tool(toolset.ToolWrite), mustJSON(toolset.WriteInput{Path: "g", Content: "x"}), nil)); r.Type != envapi.ReceiptResult {
				t.Fatalf("write after the change = %+v", r)
			}
		})
	}
}
