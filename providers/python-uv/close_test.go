package pythonuv

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Once Close has begun the provider serves nothing more: every operation
// that arrives, whatever its kind, fails with unavailable, and none of
// them changes the state directory, which a provider started after this
// one reads. A binding attached before Close stays recorded.
func TestOperationsAfterCloseAreUnavailable(t *testing.T) {
	state := t.TempDir()
	r := newRigOn(t, fixtures(t), nil, WithStateDir(state))
	s := r.attach("s1")
	warm(t, r, s)
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}

	other := r.session("s2")
	for _, op := range []struct {
		name string
		cmd  envapi.Command
	}{
		{"setup", other.Setup(nil)},
		{"execute", s.Execute(impl("plain"), json.RawMessage(`{}`), nil)},
		{"detach", s.Detach()},
		{"teardown", s.Teardown()},
	} {
		rc := r.post(op.cmd)
		if rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeUnavailable {
			t.Errorf("%s after Close = %s, want failure unavailable", op.name, describe(rc))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.p.Prepare(ctx, "plain"); !isCode(err, envapi.CodeUnavailable) {
		t.Errorf("Prepare of a prepared project after Close = %v, want unavailable", err)
	}

	records, err := filepath.Glob(filepath.Join(state, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 {
		t.Errorf("binding records after the closed provider was asked to act: %v, want s1's alone", records)
	}
	next, err := New(fixtureConfig(uvPath(t), r.root), WithStateDir(state))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if len(next.bindings) != 1 {
		t.Errorf("the next provider on the state directory serves %v, want s1 alone", next.bindings)
	}
}

// An execute running when Close begins is stopped: Close returns only once
// its processes are gone, and the execute answers cancelled with nothing
// finished.
func TestCloseStopsExecuteInFlight(t *testing.T) {
	r := newRig(t, nil)
	s := r.attach("s")
	warm(t, r, s)
	cmd, done, pids := startSleeper(t, r, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{pids.Parent, pids.Child} {
		if !processGone(pid) {
			t.Errorf("process %d of the execute still runs once Close returned", pid)
		}
	}
	select {
	case rc := <-done:
		wantFailure(t, rc, envapi.CodeCancelled)
	case <-ctx.Done():
		t.Fatal("the execute was not answered after Close")
	}
	if n := r.brain.Count(envtest.Execution("s", cmd.Operation.Sequence, envapi.MethodFinish)); n != 0 {
		t.Fatalf("%d finish calls for an execute Close stopped", n)
	}
}

// isCode reports whether err is an *envsdk.Error with code.
func isCode(err error, code string) bool {
	e, ok := errors.AsType[*envsdk.Error](err)
	return ok && e.Code == code
}
