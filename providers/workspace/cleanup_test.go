package workspace

import (
	"bufio"
	"encoding/json"
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

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// freezerHierarchy is where the cgroup v1 freezer hierarchy is mounted. A
// process frozen there does not act on SIGKILL until it is thawed, so no
// kill of a command's tree can end it: its cleanup fails.
const freezerHierarchy = "/sys/fs/cgroup/freezer"

var freezerSeq atomic.Int64

// freezer is a cgroup of the freezer hierarchy made for one test.
type freezer struct{ dir string }

// newFreezer creates a freezer cgroup, thawed and emptied when the test
// ends. It skips the test where none can be made (not root, or no cgroup
// v1 freezer).
func newFreezer(t *testing.T) *freezer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("freezing a process needs root")
	}
	dir := filepath.Join(freezerHierarchy, fmt.Sprintf("brain-workspace-test-%d-%d", os.Getpid(), freezerSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("no cgroup v1 freezer to make an unkillable process: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "freezer.state")); err != nil {
		_ = os.Remove(dir)
		t.Skipf("no cgroup v1 freezer to make an unkillable process: %v", err)
	}
	fz := &freezer{dir: dir}
	t.Cleanup(func() { fz.release(t) })
	return fz
}

// stuckLine is a shell line that starts a child, freezes it, prints its
// pid and waits: past a deadline, the child outlives every kill.
func (fz *freezer) stuckLine() string {
	return fmt.Sprintf(`sleep 300 </dev/null >/dev/null 2>&1 &
echo $! >%[1]s/cgroup.procs
echo FROZEN >%[1]s/freezer.state
until [ "$(cat %[1]s/freezer.state)" = FROZEN ]; do sleep 0.01; done
echo $!
wait`, fz.dir)
}

func (fz *freezer) pids() []int {
	data, _ := os.ReadFile(filepath.Join(fz.dir, "cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// release thaws the cgroup, so that the SIGKILL its processes were sent
// ends them, then removes it with the cgroup v2 directories the members
// were left in by the failed cleanup.
func (fz *freezer) release(t *testing.T) {
	var leftover []string
	for _, pid := range fz.pids() {
		if dir := cgroup2Dir(pid); strings.HasPrefix(filepath.Base(dir), "proctree-") {
			leftover = append(leftover, dir)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := os.WriteFile(filepath.Join(fz.dir, "freezer.state"), []byte("THAWED"), 0); err != nil {
		t.Errorf("thaw %s: %v", fz.dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(fz.pids()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(fz.dir); err != nil {
		t.Errorf("remove %s (processes %v): %v", fz.dir, fz.pids(), err)
	}
	for _, dir := range leftover {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove %s: %v", dir, err)
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

// A command that passes its deadline while one of its processes cannot be
// killed answers timeout (the first cause), keeps its partial output and
// reports the failed cleanup in details.cleanup_error.
func TestDeadlineKeepsCleanupEvidence(t *testing.T) {
	fz := newFreezer(t)
	// The provider's own handler, with envsdk's default stop grace: the
	// provider's kill bound keeps its answer, with its evidence, inside it.
	f := newFixture(t, Options{})

	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	const deadline = 1500
	start := time.Now()
	r := f.exec(c, "command", sh(fz.stuckLine()), envtest.Millis(deadline))
	took := time.Since(start)
	fails(t, r, envapi.CodeTimeout)
	if !strings.Contains(r.Message, "deadline") {
		t.Errorf("message %q does not name the deadline", r.Message)
	}
	var details struct {
		Stdout       string `json:"stdout"`
		CleanupError string `json:"cleanup_error"`
	}
	if err := json.Unmarshal(r.Details, &details); err != nil {
		t.Fatalf("details %s: %v", r.Details, err)
	}
	pids := pidsIn(t, details.Stdout)
	if len(pids) != 1 {
		t.Fatalf("details %s: partial stdout does not hold the frozen child's pid", r.Details)
	}
	if !alive(t, pids[0]) {
		t.Fatalf("the frozen child %d did not survive the kill; the cleanup did not fail", pids[0])
	}
	if details.CleanupError == "" {
		t.Fatalf("details %s: no cleanup_error", r.Details)
	}
	if !strings.Contains(details.CleanupError, "still") || strings.Contains(details.CleanupError, "did not stop within") {
		t.Fatalf("cleanup_error %q does not report the survivors of the kill", details.CleanupError)
	}
	if took < deadline*time.Millisecond || took > deadline*time.Millisecond+envsdk.DefaultStopGrace {
		t.Fatalf("answered after %s for a %d ms deadline", took, deadline)
	}
}

// The conformance cases deadline/cleanup-evidence and
// cancel/cleanup-evidence, with the stuck role
// played by a command whose child cannot be killed. The answer comes after
// the provider's kill bound, or the handler's stop grace, past the
// deadline: the grace allowed here covers both.
func TestConformanceCleanupEvidence(t *testing.T) {
	const token = "workspace-conformance"
	conformance.Run(t, func(t *testing.T) conformance.Target {
		fz := newFreezer(t)
		root := t.TempDir()
		p, err := New(Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { killMarked(t, root) })
		return conformance.Target{
			BaseURL: conformance.ServeHandler(t, p.Handler(token)),
			Token:   token,
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho:  {Implementation: tool(toolset.ToolCommand), Input: json.RawMessage(`{"argv":["echo","hello"]}`), Check: commandOutput("hello\n")},
				conformance.RoleStuck: {Implementation: tool(toolset.ToolCommand), Input: mustJSON(t, sh(fz.stuckLine()))},
			},
			Capabilities: conformance.Capabilities{Cancel: true},
		}
	}, &conformance.Options{
		Run:      []string{"deadline/cleanup-evidence", "cancel/cleanup-evidence"},
		Deadline: 1000 * time.Millisecond,
		Grace:    12 * time.Second,
	})
}
