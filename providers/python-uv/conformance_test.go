package pythonuv

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// napMs is how long the sleep role runs when nothing stops it.
const napMs = 3000

func TestConformance(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	plain := filepath.Join(root, "plain")
	cfg := Config{UV: uv, Projects: map[string]Project{
		"echo": {Directory: plain, Module: "echo"},
		"nap":  {Directory: plain, Module: "nap"},
	}}
	// Sync once up front, so each case's fresh provider finds the
	// installation current and its own preparation is quick.
	warm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := warm.Prepare(ctx, "echo"); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	_ = warm.Close()

	const token = "python-uv-conformance"
	conformance.Run(t, func(t *testing.T) conformance.Target {
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		url := conformance.ServeHandler(t, envsdk.NewHandler(p, &envsdk.Options{Token: token}))
		return conformance.Target{
			BaseURL: url,
			Token:   token,
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: impl("echo"), Input: json.RawMessage(`{"n":1}`), Check: func(out json.RawMessage) error {
					if !jsonEqual(out, `{"echo":{"n":1}}`) {
						return fmt.Errorf("echo answered %s", out)
					}
					return nil
				}},
				conformance.RoleSleep:       {Implementation: impl("nap"), Input: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, napMs)), Runs: napMs * time.Millisecond},
				conformance.RoleUnsupported: {Implementation: impl("not-configured"), Input: json.RawMessage(`{}`)},
			},
			Capabilities: conformance.Capabilities{
				Cancel:         true,
				LazyAllocation: true,
			},
		}
	}, &conformance.Options{
		Expect:   []string{conformance.CapCancel, conformance.CapLazyAllocation},
		Deadline: 1500 * time.Millisecond,
	})
}

// The conformance cases deadline/cleanup-evidence and
// cancel/cleanup-evidence, with the stuck role
// played by a module whose child cannot be killed. The answer comes after
// the kill and output drain bounds past the deadline: the handler's stop
// grace and the grace allowed here cover both.
func TestConformanceCleanupEvidence(t *testing.T) {
	uv := uvPath(t)
	plain := filepath.Join(fixtures(t), "plain")
	cfg := Config{UV: uv, Projects: map[string]Project{
		"echo":  {Directory: plain, Module: "echo"},
		"stuck": {Directory: plain, Module: "stuck"},
	}}
	const token = "python-uv-conformance"
	conformance.Run(t, func(t *testing.T) conformance.Target {
		fz := newFreezer(t)
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := p.Prepare(ctx, "echo"); err != nil {
			t.Fatalf("prepare: %v", err)
		}
		url := conformance.ServeHandler(t, envsdk.NewHandler(p, &envsdk.Options{Token: token, StopGrace: 10 * time.Second}))
		holders := t.TempDir()
		t.Cleanup(func() { killHolders(holders) })
		stuck, _ := json.Marshal(map[string]string{"pid_file": filepath.Join(holders, "holder"), "freezer": fz})
		return conformance.Target{
			BaseURL: url,
			Token:   token,
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: impl("echo"), Input: json.RawMessage(`{"n":1}`), Check: func(out json.RawMessage) error {
					if !jsonEqual(out, `{"echo":{"n":1}}`) {
						return fmt.Errorf("echo answered %s", out)
					}
					return nil
				}},
				conformance.RoleStuck: {Implementation: impl("stuck"), Input: stuck},
			},
			Capabilities: conformance.Capabilities{Cancel: true},
		}
	}, &conformance.Options{
		Run:      []string{"deadline/cleanup-evidence", "cancel/cleanup-evidence"},
		Deadline: 1500 * time.Millisecond,
		Grace:    12 * time.Second,
	})
}
