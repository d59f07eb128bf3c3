package pythonuv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// freezerHierarchy is where the cgroup v1 freezer hierarchy is mounted. A
// process frozen there does not act on SIGKILL until it is thawed, so no
// kill of an invocation's tree can end it: its cleanup fails.
const freezerHierarchy = "/sys/fs/cgroup/freezer"

var freezerSeq atomic.Int64

// newFreezer creates a freezer cgroup for the stuck module, thawed and
// emptied when the test ends. It skips the test where none can be made
// (not root, or no cgroup v1 freezer).
func newFreezer(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("freezing a process needs root")
	}
	dir := filepath.Join(freezerHierarchy, fmt.Sprintf("brain-python-uv-test-%d-%d", os.Getpid(), freezerSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no cgroup v1 freezer to make an unkillable process: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "freezer.state")); err != nil {
		_ = os.Remove(dir)
		t.Skipf("no cgroup v1 freezer to make an unkillable process: %v", err)
	}
	t.Cleanup(func() { releaseFreezer(t, dir) })
	return dir
}

func frozenPids(dir string) []int {
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// releaseFreezer thaws dir, so that the SIGKILL its processes were sent
// ends them, then removes it with the cgroup v2 directories the members
// were left in by the failed cleanup.
func releaseFreezer(t *testing.T, dir string) {
	var leftover []string
	for _, pid := range frozenPids(dir) {
		if d := cgroup2Dir(pid); strings.HasPrefix(filepath.Base(d), "proctree-") {
			leftover = append(leftover, d)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0); err != nil {
		t.Errorf("thaw %s: %v", dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(frozenPids(dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(dir); err != nil {
		t.Errorf("remove %s (processes %v): %v", dir, frozenPids(dir), err)
	}
	for _, d := range leftover {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove %s: %v", d, err)
		}
	}
}

// cgroup2Dir is the directory of pid's cgroup v2, or "".
func cgroup2Dir(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	rel, found := "", false
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil || !found {
		return ""
	}
	defer mi.Close()
	sc := bufio.NewScanner(mi)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f := strings.Fields(pre)
		if !ok || !strings.HasPrefix(post, "cgroup2 ") || len(f) < 5 {
			continue
		}
		if inner, ok := strings.CutPrefix(rel, f[3]); ok {
			return filepath.Join(f[4], inner)
		}
	}
	return ""
}
