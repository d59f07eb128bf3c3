package pythonuv

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// uvPath finds uv for the tests. Without it the test is skipped, unless
// BRAIN_REQUIRE_UV=1 makes it fail. A pyenv shim is resolved to the real
// binary so each invocation does not pay for the shim.
func uvPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("uv")
	if err != nil {
		if os.Getenv("BRAIN_REQUIRE_UV") == "1" {
			t.Fatalf("uv is required (BRAIN_REQUIRE_UV=1) but not on PATH: %v", err)
		}
		t.Skip("uv is not installed (pip install uv); set BRAIN_REQUIRE_UV=1 to make this a failure")
	}
	if filepath.Base(filepath.Dir(path)) == "shims" {
		if out, err := exec.Command("pyenv", "which", "uv").Output(); err == nil {
			if real := strings.TrimSpace(string(out)); real != "" {
				return real
			}
		}
	}
	return path
}

// fixtures copies testdata/projects into a fresh directory, so the
// virtual environments uv creates never land in the repository.
func fixtures(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "projects")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".venv" {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixtures: %v", err)
	}
	return dst
}

// fixtureConfig configures the fixture projects under root:
// locked (six, setup prepare), failing (setup fail_setup), plain (no setup,
// several modules) and one project per extra plain module.
func fixtureConfig(uv, root string) Config {
	plain := filepath.Join(root, "plain")
	return Config{
		UV: uv,
		Projects: map[string]Project{
			"locked":   {Directory: filepath.Join(root, "locked"), Setup: "prepare", Module: "tool"},
			"failing":  {Directory: filepath.Join(root, "failing"), Setup: "fail_setup", Module: "tool"},
			"plain":    {Directory: plain, Module: "echo"},
			"sleeper":  {Directory: plain, Module: "sleeper"},
			"crash":    {Directory: plain, Module: "crash"},
			"not_json": {Directory: plain, Module: "not_json"},
			"flood":    {Directory: plain, Module: "flood"},
			"environ":  {Directory: plain, Module: "environ"},
		},
	}
}

// rig is a provider served over loopback HTTP, with a fake Brain for
// callbacks.
type rig struct {
	t     testing.TB
	p     *Provider
	url   string
	brain *envtest.Brain
	root  string
	logs  *envtest.Buffer
}

func newRig(t testing.TB, mutate func(*Config)) *rig {
	t.Helper()
	return newRigOn(t, fixtures(t), mutate)
}

// newRigOn is newRig over the fixture projects under root, such as those
// of a provider an earlier part of the test stopped, with the provider's
// options opts.
func newRigOn(t testing.TB, root string, mutate func(*Config), opts ...Option) *rig {
	t.Helper()
	uv := uvPath(t)
	cfg := fixtureConfig(uv, root)
	if mutate != nil {
		mutate(&cfg)
	}
	logs := &envtest.Buffer{}
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)
	p, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	brain := envtest.NewBrain(t)
	srv := httptest.NewServer(envsdk.NewHandler(p, &envsdk.Options{Client: brain.Client(), StopGrace: 10 * time.Second}))
	t.Cleanup(func() {
		srv.Close()
		_ = p.Close()
		if t.Failed() {
			t.Logf("provider logs:\n%s", logs.String())
		}
	})
	return &rig{t: t, p: p, url: srv.URL, brain: brain, root: root, logs: logs}
}

// session builds the commands of one binding, with tool grants.
func (r *rig) session(id string) *envtest.Commands {
	c := envtest.NewCommands(id, "python")
	c.Brain = r.brain
	return c
}

// post sends cmd and returns the receipt; transport errors fail the test.
func (r *rig) post(cmd envapi.Command) envapi.Receipt {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, body, resp, err := envtest.Post(ctx, nil, r.url, "", cmd)
	if err != nil || resp == nil {
		r.t.Fatalf("post %s: status %d, err %v, body %s", cmd.Operation.Request.Type, status, err, body)
	}
	return resp.Receipt
}

// attach sets up a binding and checks it was accepted.
func (r *rig) attach(id string) *envtest.Commands {
	r.t.Helper()
	c := r.session(id)
	if rc := r.post(c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		r.t.Fatalf("setup %s: %s", id, describe(rc))
	}
	return c
}

func impl(name string) json.RawMessage {
	return json.RawMessage(`{"kind":"python_project","name":"` + name + `"}`)
}

func describe(r envapi.Receipt) string {
	raw, _ := json.Marshal(r)
	return string(raw)
}

// wantFailure checks a failure receipt's code and returns its details.
func wantFailure(t testing.TB, r envapi.Receipt, code string) map[string]any {
	t.Helper()
	if r.Type != envapi.ReceiptFailure || r.Code != code {
		t.Fatalf("want failure %s, got %s", code, describe(r))
	}
	var details map[string]any
	if len(r.Details) > 0 {
		if err := json.Unmarshal(r.Details, &details); err != nil {
			t.Fatalf("details of %s: %v", code, err)
		}
	}
	return details
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

// processGone reports whether pid no longer runs (absent, or a zombie
// waiting for a reaper that is not ours).
func processGone(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// jsonEqual compares JSON documents by value.
func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
