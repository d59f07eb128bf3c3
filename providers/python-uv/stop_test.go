package pythonuv

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

type sleeperPids struct {
	Parent int `json:"parent"`
	Child  int `json:"child"`
}

// waitForFile waits until path exists (the sleeper renames it into place
// once both pids are known) or ctx ends.
// startSleeper starts the sleeper on s and waits until its processes
// run: it answers the execute, the channel its receipt arrives on, and the
// sleeper's process ids.
func startSleeper(t *testing.T, r *rig, s *envtest.Commands) (envapi.Command, <-chan envapi.Receipt, sleeperPids) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids.json")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	cmd := s.Execute(impl("sleeper"), input, nil)
	done := make(chan envapi.Receipt, 1)
	go func() { done <- r.post(cmd) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data, err := waitForFile(ctx, pidFile)
	if err != nil {
		t.Fatalf("sleeper did not start: %v", err)
	}
	var pids sleeperPids
	if err := json.Unmarshal(data, &pids); err != nil {
		t.Fatal(err)
	}
	return cmd, done, pids
}

func waitForFile(ctx context.Context, path string) ([]byte, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// waitGone waits until pid no longer runs or ctx ends.
func waitGone(ctx context.Context, pid int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func checkGone(t *testing.T, pids sleeperPids) {
	t.Helper()
	if pids.Parent == 0 || pids.Child == 0 {
		t.Fatalf("pids %+v", pids)
	}
	// SIGKILL is delivered asynchronously: allow the kernel a moment.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, pid := range []int{pids.Parent, pids.Child} {
		if err := waitGone(ctx, pid); err != nil {
			t.Errorf("process %d still runs after the invocation stopped: %v", pid, err)
		}
	}
}

// warm prepares the plain project so a deadline measures the module only.
func warm(t *testing.T, r *rig, s *envtest.Commands) {
	t.Helper()
	if rc := r.post(s.Execute(impl("plain"), json.RawMessage(`{}`), nil)); rc.Type != envapi.ReceiptResult {
		t.Fatalf("warm up: %s", describe(rc))
	}
}

func TestDeadlineKillsProcessGroup(t *testing.T) {
	r := newRig(t, nil)
	s := r.attach("s")
	warm(t, r, s)
	pidFile := filepath.Join(t.TempDir(), "pids.json")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	const deadline = 4000
	start := time.Now()
	rc := r.post(s.Execute(impl("sleeper"), input, envtest.Millis(deadline)))
	took := time.Since(start)
	d := wantFailure(t, rc, envapi.CodeTimeout)
	if d["project"] != "sleeper" {
		t.Fatalf("timeout details %v", d)
	}
	if took < deadline*time.Millisecond || took > deadline*time.Millisecond+5*time.Second {
		t.Fatalf("answered after %s for a %d ms deadline", took, deadline)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the sleeper never recorded its pids within the deadline: %v", err)
	}
	var pids sleeperPids
	if err := json.Unmarshal(data, &pids); err != nil {
		t.Fatal(err)
	}
	checkGone(t, pids)
}

func TestCancelKillsProcessGroup(t *testing.T) {
	r := newRig(t, nil)
	s := r.attach("s")
	warm(t, r, s)
	cmd, done, pids := startSleeper(t, r, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if processGone(pids.Parent) || processGone(pids.Child) {
		t.Fatalf("sleeper processes not running before the cancel: %+v", pids)
	}
	if rc := r.post(s.Cancel(cmd.Operation.Sequence)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel: %s", describe(rc))
	}
	select {
	case rc := <-done:
		wantFailure(t, rc, envapi.CodeCancelled)
	case <-ctx.Done():
		t.Fatal("the cancelled execute did not answer")
	}
	checkGone(t, pids)
	// Nothing was finished: a cancelled Tool has no result to commit.
	if n := r.brain.Count(envtest.Execution("s", cmd.Operation.Sequence, envapi.MethodFinish)); n != 0 {
		t.Fatalf("%d finish calls for a cancelled execute", n)
	}
}

// Detach and teardown while an execute runs on the binding fail with busy
// and leave it attached: released, the binding would still run code its
// session let go of. Once the execute ended (cancelled here) both are
// accepted. Another binding's execute does not hold them back.
func TestReleaseWhileExecuteRunsIsBusy(t *testing.T) {
	r := newRig(t, nil)
	s := r.attach("s")
	other := r.attach("o")
	warm(t, r, s)
	cmd, done, _ := startSleeper(t, r, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wantFailure(t, r.post(s.Detach()), envapi.CodeBusy)
	wantFailure(t, r.post(s.Teardown()), envapi.CodeBusy)
	if rc := r.post(other.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown of another binding: %s", describe(rc))
	}
	if rc := r.post(s.Execute(impl("plain"), json.RawMessage(`{}`), nil)); rc.Type != envapi.ReceiptResult {
		t.Fatalf("execute on the binding a busy detach left attached: %s", describe(rc))
	}
	if rc := r.post(s.Cancel(cmd.Operation.Sequence)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel: %s", describe(rc))
	}
	select {
	case rc := <-done:
		wantFailure(t, rc, envapi.CodeCancelled)
	case <-ctx.Done():
		t.Fatal("the cancelled execute did not answer")
	}
	if rc := r.post(s.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown once idle: %s", describe(rc))
	}
}
