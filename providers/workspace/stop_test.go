package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// alive reports whether pid exists in /proc and is not a zombie.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// survivor describes pid when it is alive and still carries the run
// marker (so a recycled pid is not mistaken for a survivor), else "".
func survivor(t *testing.T, pid int) string {
	t.Helper()
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || !alive(t, pid) || !strings.Contains(string(env), MarkerEnv+"=") {
		return ""
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return string(stat)
}

// markedProcesses lists live processes whose environment carries MarkerEnv
// and a WORKSPACE under root, so that tests running in parallel each see
// only the commands of their own provider.
func markedProcesses(t *testing.T, root string) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), MarkerEnv+"=") && strings.Contains(string(env), "\x00WORKSPACE="+root+"/") && alive(t, pid) {
			out = append(out, pid)
		}
	}
	return out
}

func pidsIn(t *testing.T, text string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(text) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stubbornTree prints the pids of a child that ignores SIGTERM, a child
// that starts its own session, and the leader, then waits forever.
const stubbornTree = `sh -c 'trap "" TERM; echo $$; while :; do sleep 1; done' &
setsid sh -c 'trap "" TERM; echo $$; exec sleep 300' &
(setsid sh -c 'echo $$; exec sleep 300' &)
echo $$; wait`

func TestDeadlineKillsWholeTree(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	start := time.Now()
	r := f.exec(c, "command", sh(stubbornTree), envtest.Millis(1500))
	fails(t, r, envapi.CodeTimeout)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("timeout answered after %v", el)
	}
	var details struct{ Stdout string }
	if err := json.Unmarshal(r.Details, &details); err != nil {
		t.Fatalf("details %s: %v", r.Details, err)
	}
	pids := pidsIn(t, details.Stdout)
	if len(pids) != 4 {
		t.Fatalf("partial stdout %q, want 4 pids", details.Stdout)
	}
	for _, pid := range pids {
		if s := survivor(t, pid); s != "" {
			t.Errorf("process %d survived the deadline: %s", pid, s)
		}
	}
	if left := markedProcesses(t, f.root); len(left) > 0 {
		t.Errorf("marked processes left: %v", left)
	}
}

func TestCommandTimeoutOption(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"timeout_ms": 300}`))))
	r := f.exec(c, "command", sh("sleep 30"), nil)
	fails(t, r, envapi.CodeTimeout)
	if !strings.Contains(r.Message, "300ms") {
		t.Errorf("message %q", r.Message)
	}
	fails(t, f.exec(c, "command", map[string]any{"shell": "sleep 30", "timeout_ms": 200}, envtest.Millis(60_000)), envapi.CodeTimeout)
}

// TestCancelKillsTreeAndStreams cancels a running command once its output
// has been streamed to Brain, then checks that nothing of it survived.
func TestCancelKillsTreeAndStreams(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	cmd := c.Execute(tool("command"), mustJSON(t, sh(stubbornTree)), nil)
	seq := cmd.Operation.Sequence
	done := make(chan envapi.Receipt, 1)
	go func() { done <- f.post(cmd) }()

	// Wait until the four pids have been streamed.
	var streamed strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var last uint64
	for len(pidsIn(t, streamed.String())) < 4 {
		after := last
		call, err := f.brain.WaitFor(ctx, func(cl envtest.Call) bool {
			return cl.Kind == envtest.KindExecution && cl.Sequence == seq && cl.Method == envapi.MethodEmit && cl.Committed > after
		})
		if err != nil {
			t.Fatalf("waiting for streamed output (have %q): %v", streamed.String(), err)
		}
		last = call.Committed
		var in struct {
			EventType string `json:"event_type"`
			Data      outputEvent
		}
		if err := json.Unmarshal(call.Input, &in); err != nil || in.EventType != OutputEvent || in.Data.Stream != "stdout" {
			t.Fatalf("emit %s: %v", call.Input, err)
		}
		streamed.WriteString(in.Data.Data)
	}
	accepted(t, f.post(c.Cancel(seq)))
	r := <-done
	fails(t, r, envapi.CodeCancelled)
	for _, pid := range pidsIn(t, streamed.String()) {
		if s := survivor(t, pid); s != "" {
			t.Errorf("process %d survived the cancel: %s", pid, s)
		}
	}
	if left := markedProcesses(t, f.root); len(left) > 0 {
		t.Errorf("marked processes left: %v", left)
	}
	// No finish for a cancelled execute.
	if n := f.brain.Count(envtest.Execution("s1", seq, envapi.MethodFinish)); n != 0 {
		t.Errorf("%d finish calls", n)
	}
}

func TestBackgroundChildSweptAfterExit(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("sleep 300 & echo $!"), nil), &out)
	pids := pidsIn(t, out.Stdout)
	if len(pids) != 1 || alive(t, pids[0]) {
		t.Errorf("background child %v (output %+v) not swept", pids, out)
	}
}

// TestInputTimeoutCannotLiftTheBound checks that a command's own
// timeout_ms only shortens the bound of a command without a deadline: a
// long or overflowing one does not lift the operator's or the binding's.
func TestInputTimeoutCannotLiftTheBound(t *testing.T) {
	f := newFixture(t, Options{CommandTimeout: 300 * time.Millisecond})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	bound := f.commands("s2")
	accepted(t, f.post(bound.Setup(json.RawMessage(`{"timeout_ms": 300}`))))
	for _, tc := range []struct {
		name string
		c    *envtest.Commands
		in   map[string]any
	}{
		{"long", c, map[string]any{"shell": "sleep 20", "timeout_ms": 3_600_000}},
		{"overflowing", c, map[string]any{"shell": "sleep 20", "timeout_ms": int64(9223372036854775807)}},
		{"binding bound", bound, map[string]any{"shell": "sleep 20", "timeout_ms": 3_600_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := f.exec(tc.c, "command", tc.in, nil)
			fails(t, r, envapi.CodeTimeout)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the command ran %s", d)
			}
		})
	}
}
