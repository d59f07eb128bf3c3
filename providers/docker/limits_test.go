package docker

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A profile's limits are the container's: its CPU bound, memory without
// swap beyond it, pids, the size and owner of /tmp, and its user (not the
// default one) for every command.
func TestProfileLimitsApplied(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	h := newHarnessWith(t, "", cli, Profiles{"tight": {
		Image: image, User: "1001:1002", CPUs: 0.5, MemoryMB: 64, Pids: 16, TmpfsMB: 4,
	}})
	c := h.commands()
	h.setup(c, "tight")
	// cgroup v1 paths first, v2 after: each probe prints one line.
	out := h.shell(c, `id -u; id -g
echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us 2>/dev/null || cat /sys/fs/cgroup/cpu.max)
cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max
cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.swap.max 2>/dev/null || echo no-swap-accounting
cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max
grep ' /tmp ' /proc/mounts
stat -c '%u:%g' /tmp /workspace
touch /workspace/mine && stat -c '%u:%g' /workspace/mine`)
	lines := strings.Split(strings.TrimRight(out.Stdout, "\n"), "\n")
	if out.ExitCode != 0 || len(lines) != 10 {
		t.Fatalf("probe = %+v", out)
	}
	cpu := strings.Fields(lines[2])
	if len(cpu) != 2 || !(cpu[0] == "50000" && cpu[1] == "100000") {
		t.Errorf("CPU quota and period = %q; want 50000 of 100000 (0.5 CPU)", lines[2])
	}
	if lines[3] != "67108864" {
		t.Errorf("memory limit = %q; want 64 MiB", lines[3])
	}
	if l := lines[4]; l != "67108864" && l != "0" && l != "no-swap-accounting" {
		t.Errorf("memory+swap limit = %q; want 64 MiB (no swap beyond the memory)", l)
	}
	want := map[int]string{0: "1001", 1: "1002", 5: "16", 7: "1001:1002", 8: "1001:1002", 9: "1001:1002"}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("probe line %d = %q; want %q\n%s", i, lines[i], w, out.Stdout)
		}
	}
	if m := lines[6]; !strings.Contains(m, "tmpfs") || !strings.Contains(m, "size=4096k") || !strings.Contains(m, "nosuid") || !strings.Contains(m, "nodev") {
		t.Errorf("/tmp mount = %q; want a nosuid, nodev tmpfs of 4 MiB", m)
	}
	// The bound holds: more than 4 MiB in /tmp fails.
	if out := h.shell(c, "dd if=/dev/zero of=/tmp/big bs=1024 count=5000 2>&1; echo rc=$?; rm -f /tmp/big"); !strings.Contains(out.Stdout, "No space left") {
		t.Errorf("5000 KiB into a 4 MiB /tmp = %+v; want no space left", out)
	}
}

// Setup pins the image a profile's tag names then: a tag moved to another
// image afterwards changes nothing for the binding.
func TestSetupPinsTheImage(t *testing.T) {
	t.Parallel()
	cli, _ := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := "brain-docker-test:pinned-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	first := buildDerivedImage(t, ctx, cli, tag, "RUN echo first > /marker\n")
	h := newHarnessWith(t, "", cli, Profiles{"default": {Image: tag}})
	c := h.commands()
	h.setup(c, "")
	second := buildDerivedImage(t, ctx, cli, tag, "RUN echo second > /marker\n")
	// The containers go before the image they run (cleanups run last
	// first), so that its removal is not refused.
	cleanupInstance(t, cli, h.p.Instance())
	if first == second {
		t.Fatalf("both builds gave image %s", first)
	}
	if out := h.shell(c, "cat /marker"); out.Stdout != "first\n" {
		t.Fatalf("binding set up before the tag moved runs %+v; want the image pinned at setup", out)
	}
	later := h.commands()
	h.setup(later, "")
	if out := h.shell(later, "cat /marker"); out.Stdout != "second\n" {
		t.Fatalf("binding set up after the tag moved runs %+v; want the tag's image then", out)
	}
}

// A profile that names a Docker network joins its containers to that
// network, and to no other.
func TestProfileNetworkJoined(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "brain-docker-test-net-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	created, err := cli.NetworkCreate(ctx, name, network.CreateOptions{
		Internal: true, Labels: map[string]string{testLabel: testLabelValue},
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: "10.213.77.0/24"}}},
	})
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	t.Cleanup(func() { _ = cli.NetworkRemove(context.Background(), created.ID) })
	h := newHarnessWith(t, "", cli, Profiles{"default": {Image: image}, "net": {Image: image, Network: name}})
	joined, isolated := h.commands(), h.commands()
	h.setup(joined, "net")
	h.setup(isolated, "")
	// The interfaces, then how often the network's subnet shows in the
	// routing table.
	probe := "echo $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort); grep -c 10.213.77 /proc/net/fib_trie || true"
	if out := h.shell(joined, probe); !strings.HasPrefix(out.Stdout, "eth0 lo\n") || strings.HasSuffix(out.Stdout, "\n0\n") {
		t.Errorf("interfaces of a container on %s = %+v; want eth0 in 10.213.77.0/24 and lo", name, out)
	}
	if out := h.shell(isolated, probe); out.Stdout != "lo\n0\n" {
		t.Errorf("interfaces of a container of the default profile = %+v; want lo only", out)
	}
}

// A profile's timeout stops an execute that carries no deadline, with a
// timeout; an execute with a deadline of its own runs until that.
func TestProfileTimeout(t *testing.T) {
	t.Parallel()
	cli, image := testEngine(t)
	h := newHarnessWith(t, "", cli, Profiles{"default": {Image: image, Timeout: Duration(time.Second)}})
	c := h.commands()
	h.setup(c, "")
	// Allocated first, under a deadline of its own that a slow Engine's
	// container start fits in: the timeout below bounds the command.
	warm := int64(60000)
	h.commandOutput(h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), &warm)))
	start := time.Now()
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "sleep 30"}), nil)), envapi.CodeTimeout)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1s profile timeout answered after %v", d)
	}
	deadline := int64(20000)
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "sleep 2; echo done"}), &deadline))
	if out := h.commandOutput(r); out.Stdout != "done\n" {
		t.Errorf("an execute with a 20s deadline under a 1s profile timeout = %+v", out)
	}
}
