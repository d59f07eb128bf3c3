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
		// 10^13 ms would wrap to a negative time.Duration.
		{"huge timeout", Config{DefaultTimeoutMS: 1 << 62, Projects: map[string]Project{"p": {Directory: ok, Module: "m"}}}, "must not exceed"},
		{"huge preparation timeout", Config{PreparationTimeoutMS: maxTimeoutMS + 1, Projects: map[string]Project{"p": {Directory: ok, Module: "m"}}}, "must not exceed"},
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

// FuzzParseConfig: any configuration file gives settings or an error,
// never a panic; settings have positive limits and timeouts, and every
// project a valid name and module and a directory holding its lock.
func FuzzParseConfig(f *testing.F) {
	base := f.TempDir()
	proj := filepath.Join(base, "proj")
	if err := os.Mkdir(proj, 0o700); err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"pyproject.toml", "uv.lock"} {
		if err := os.WriteFile(filepath.Join(proj, name), nil, 0o600); err != nil {
			f.Fatal(err)
		}
	}
	f.Add([]byte(`{"projects":{"p":{"directory":"proj","module":"m"}}}`))
	f.Add([]byte(`{"uv":"uv","cache_dir":"cache","default_timeout_ms":5000,"env_allow":["LANG","LC_*"],"projects":{"p":{"directory":"proj","module":"a.b","setup":"s"}}}`))
	f.Add([]byte(`{"default_timeout_ms":9223372036854775807,"projects":{"p":{"directory":"proj","module":"m"}}}`))
	f.Add([]byte(`{"output_limit_bytes":-1,"projects":{"p":{"directory":"../proj","module":"m"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseConfig(data, base)
		if err != nil {
			return
		}
		s, err := resolve(cfg, fakeLookPath)
		if err != nil {
			return
		}
		if s.outputLimit <= 0 || s.stderrLimit <= 0 || s.defaultTimeout <= 0 || s.preparationTimeout <= 0 {
			t.Fatalf("settings with a limit or timeout not positive: %+v", s)
		}
		for name, p := range s.projects {
			if !projectNameRE.MatchString(name) || !moduleRE.MatchString(p.module) || (p.setup != "" && !moduleRE.MatchString(p.setup)) {
				t.Fatalf("project %q resolved with %+v", name, p)
			}
			if _, err := os.Stat(filepath.Join(p.dir, "uv.lock")); err != nil {
				t.Fatalf("project %q in %s: %v", name, p.dir, err)
			}
		}
	})
}

// TestLoadConfigRefusesAStrayClosingBracket: a configuration file with
// anything after its object, a stray closing brace or bracket left by an
// edit among it, is refused like other trailing data, not read as if the
// edit had been right.
func TestLoadConfigRefusesAStrayClosingBracket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	for _, bad := range []string{`{"projects":{"p":{"directory":"d","module":"m"}}}}`, `{"projects":{}}]`, "{\"projects\":{}}\n}\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "trailing data") {
			t.Errorf("LoadConfig of %q: %v, want trailing data refused", bad, err)
		}
	}
	if err := os.WriteFile(path, []byte("{\"projects\":{}}\n \t\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err != nil {
		t.Errorf("white space after the object: %v", err)
	}
}
