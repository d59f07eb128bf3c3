package braintest_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/braintest"
)

// TestOpenRefusesTwoDefaultEnvironments: two environments marked Default
// would leave the default route to chance, so a test would talk to
// either provider from run to run. Open refuses them, naming both, before
// it creates the data directory; one Default starts.
func TestOpenRefusesTwoDefaultEnvironments(t *testing.T) {
	h := http.NotFoundHandler()
	dir := filepath.Join(t.TempDir(), "data")
	b, err := braintest.Open(braintest.Options{DataDir: dir, Environments: map[string]braintest.Environment{
		"alpha": {Handler: h, APIKey: "a", Default: true},
		"beta":  {Handler: h, APIKey: "b", Default: true},
		"gamma": {Handler: h, APIKey: "c"},
	}})
	if err == nil {
		b.Stop()
		t.Fatal("Open succeeded with two default environments")
	}
	if msg := err.Error(); !strings.Contains(msg, `"alpha"`) || !strings.Contains(msg, `"beta"`) || strings.Contains(msg, `"gamma"`) || !strings.Contains(msg, "Default") {
		t.Errorf("Open = %v, want both default environments named, and only them", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the data directory was created: %v", err)
	}

	b, err = braintest.Open(braintest.Options{DataDir: filepath.Join(t.TempDir(), "data"), Environments: map[string]braintest.Environment{
		"alpha": {Handler: h, APIKey: "a", Default: true},
		"gamma": {Handler: h, APIKey: "c"},
	}})
	if err != nil {
		t.Fatalf("one default environment: Open = %v", err)
	}
	b.Stop()
}
