package pythonuv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestPrepareReportsALostInstallation: an operator who warms a project
// (Prepare) whose installation was removed since it was prepared hears
// resource_lost, as every execute of it would, not that it is ready.
func TestPrepareReportsALostInstallation(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.p.Prepare(ctx, "plain"); err != nil {
		t.Fatalf("first Prepare: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(r.root, "plain", ".venv")); err != nil {
		t.Fatal(err)
	}
	err := r.p.Prepare(ctx, "plain")
	var e *envsdk.Error
	if !errors.As(err, &e) || e.Code != envapi.CodeResourceLost {
		t.Fatalf("Prepare of a removed installation: %v, want resource_lost", err)
	}
}
