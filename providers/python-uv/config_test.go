package pythonuv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func fakeLookPath(string) (string, error) { return "/usr/bin/uv", nil }

func TestLoadConfigResolvesAndIsStrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(`{"uv":"uv","cache_dir":"cache","projects":{"p":{"directory":"proj","module":"m"},"q":{"directory":"/abs","module":"m"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Projects["p"].Directory != filepath.Join(dir, "proj") || cfg.Projects["q"].Directory != "/abs" || cfg.CacheDir != filepath.Join(dir, "cache") {
		t.Fatalf("config %+v", cfg)
	}
	for _, bad := range []string{`{"projects":{},"extra":1}`, `{"projects":{"p":{"directory":"d","module":"m","shell":"sh"}}}`, `{"projects":{}} {}`, `[`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("LoadConfig accepted %s", bad)
		}
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func projectDirWith(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestResolveValidates(t *testing.T) {
	ok := projectDirWith(t, "pyproject.toml", "uv.lock")
	noLock := projectDirWith(t, "pyproject.toml")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no projects", Config{}, "at least one project"},
		{"bad name", Config{Projects: map[string]Project{"a b": {Directory: ok, Module: "m"}}}, "not a valid project name"},
		{"module flag", Config{Projects: map[string]Project{"p": {Directory: ok, Module: "-c"}}}, "not a Python module name"},
		{"setup path", Config{Projects: map[string]Project{"p": {Directory: ok, Module: "m", Setup: "../x"}}}, "not a Python module name"},
		{"no lock", Config{Projects: map[string]Project{"p": {Directory: noLock, Module: "m"}}}, "uv.lock"},
		{"no directory", Config{Projects: map[string]Project{"p": {Module: "m"}}}, "is required"},
		{"shared dir, two setups", Config{Projects: map[string]Project{
			"p": {Directory: ok, Module: "m", Setup: "a"}, "q": {Directory: ok, Module: "m", Setup: "b"}}}, "different setup module"},
		{"negative", Config{OutputLimitBytes: -1, Projects: map[string]Project{"p": {Directory: ok, Module: "m"}}}, "negative"},
		{"env name", Config{EnvAllow: []string{"A=B"}, Projects: map[string]Project{"p": {Directory: ok, Module: "m"}}}, "env_allow"},
	} {
		_, err := resolve(tc.cfg, fakeLookPath)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err := resolve(Config{UV: "no-such-uv-binary", Projects: map[string]Project{"p": {Directory: ok, Module: "m"}}}, exec.LookPath)
	if err == nil || !strings.Contains(err.Error(), "no-such-uv-binary") {
		t.Errorf("missing uv: %v", err)
	}

	s, err := resolve(Config{Projects: map[string]Project{
		"p": {Directory: ok, Module: "pkg.tool", Setup: "pkg.prepare"}, "q": {Directory: ok + "/.", Module: "other", Setup: "pkg.prepare"}}}, fakeLookPath)
	if err != nil {
		t.Fatal(err)
	}
	if s.uv != "/usr/bin/uv" || s.outputLimit != DefaultOutputLimitBytes || s.defaultTimeout != DefaultTimeout || s.projects["p"].dir != s.projects["q"].dir {
		t.Fatalf("settings %+v", s)
	}
}
