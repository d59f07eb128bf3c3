package pythonuv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// Defaults applied by New to the zero fields of a Config.
const (
	DefaultOutputLimitBytes   = 4 << 20
	DefaultStderrLimitBytes   = 16 << 10
	DefaultTimeout            = 10 * time.Minute
	DefaultPreparationTimeout = 30 * time.Minute
)

// Config is the operator's configuration. Project directories and module
// names come only from here, never from session input.
//
// As JSON (every field but projects is optional):
//
//	{
//	  "uv": "/usr/local/bin/uv",
//	  "python": "3.11",
//	  "cache_dir": "/var/cache/brain-uv",
//	  "output_limit_bytes": 4194304,
//	  "stderr_limit_bytes": 16384,
//	  "default_timeout_ms": 600000,
//	  "preparation_timeout_ms": 1800000,
//	  "env_allow": ["MY_SETTING", "MYAPP_*"],
//	  "projects": {
//	    "report": {"directory": "/srv/tools/report", "setup": "prepare", "module": "tool"}
//	  }
//	}
type Config struct {
	// UV is the uv executable: a path, or a name looked up on PATH.
	// Default "uv". Prefer the real binary to a version manager's shim
	// (a pyenv shim adds a shell and ~0.1 s to every invocation).
	UV string `json:"uv,omitempty"`
	// Python is passed to uv as UV_PYTHON (a version request or an
	// interpreter path). Empty lets uv find the machine's interpreter;
	// interpreter downloads are always disabled.
	Python string `json:"python,omitempty"`
	// CacheDir is passed to uv as UV_CACHE_DIR. Empty uses uv's default.
	CacheDir string `json:"cache_dir,omitempty"`
	// OutputLimitBytes bounds an invocation's stdout; beyond it the
	// invocation's processes are killed and the execute fails with
	// output_limit.
	OutputLimitBytes int64 `json:"output_limit_bytes,omitempty"`
	// StderrLimitBytes bounds the stderr kept (its tail) for failure
	// details.
	StderrLimitBytes int `json:"stderr_limit_bytes,omitempty"`
	// DefaultTimeoutMS bounds an execute that carries no deadline.
	DefaultTimeoutMS int64 `json:"default_timeout_ms,omitempty"`
	// PreparationTimeoutMS bounds one preparation (sync plus setup). A
	// preparation that times out stays failed like any other.
	PreparationTimeoutMS int64 `json:"preparation_timeout_ms,omitempty"`
	// EnvAllow names further environment variables passed to uv and the
	// Python processes; an entry ending in "*" is a prefix. See
	// DefaultEnvAllow for the ones always passed. The provider's token
	// (BRAIN_ENV_TOKEN) is never passed: naming it is an error, and a
	// prefix does not reach it.
	EnvAllow []string `json:"env_allow,omitempty"`
	// Projects maps a project name (what an execute descriptor names) to
	// its installation.
	Projects map[string]Project `json:"projects"`
}

// Project is one operator-selected Python project: a directory holding
// pyproject.toml and uv.lock.
type Project struct {
	// Directory is the project (installation) directory. LoadConfig
	// resolves a relative path against the configuration file's directory;
	// New against the working directory.
	Directory string `json:"directory"`
	// Setup optionally names a module run once per installation, after
	// uv sync and before the first invocation. That it ran is recorded in
	// the virtual environment (.brain-setup): a provider started again
	// does not run it again, and a virtual environment made afresh does.
	Setup string `json:"setup,omitempty"`
	// Module is the module run for each execute.
	Module string `json:"module"`
}

var (
	projectNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	moduleRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
)

// LoadConfig reads a JSON configuration file strictly (unknown fields are
// errors) and resolves relative project directories against the file's
// directory.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("pythonuv: read config: %w", err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return Config{}, fmt.Errorf("pythonuv: config %s: %w", path, err)
	}
	cfg, err := parseConfig(data, base)
	if err != nil {
		return Config{}, fmt.Errorf("pythonuv: config %s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig decodes a configuration strictly and resolves its relative
// paths against base.
func parseConfig(data []byte, base string) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, err
	}
	// Decoder.More answers false for a closing brace or bracket, so the
	// rest is checked as bytes.
	if len(bytes.Trim(data[dec.InputOffset():], jsonSpace)) > 0 {
		return Config{}, errors.New("trailing data after the JSON object")
	}
	for name, p := range cfg.Projects {
		if p.Directory != "" && !filepath.IsAbs(p.Directory) {
			p.Directory = filepath.Join(base, p.Directory)
			cfg.Projects[name] = p
		}
	}
	if cfg.CacheDir != "" && !filepath.IsAbs(cfg.CacheDir) {
		cfg.CacheDir = filepath.Join(base, cfg.CacheDir)
	}
	return cfg, nil
}

// maxTimeoutMS is the largest timeout in milliseconds a time.Duration
// holds.
const maxTimeoutMS = math.MaxInt64 / int64(time.Millisecond)

// settings is a validated Config with defaults applied and paths resolved.
type settings struct {
	uv                 string
	python             string
	cacheDir           string
	outputLimit        int64
	stderrLimit        int
	defaultTimeout     time.Duration
	preparationTimeout time.Duration
	envAllow           []string
	projects           map[string]project
}

// project is a resolved Project.
type project struct {
	name   string
	dir    string // absolute, cleaned, symlinks resolved
	setup  string
	module string
	// locked is the digest of the project's pyproject.toml and uv.lock
	// (lockedDigest) when the configuration was loaded.
	locked string
}

// recipe is what a preparation of one directory depends on; a Reload that
// changes it forgets the preparation.
type recipe struct {
	uv, python, cacheDir, setup string
	envAllow                    string
	locked                      string
}

func (s *settings) recipeFor(p project) recipe {
	return recipe{uv: s.uv, python: s.python, cacheDir: s.cacheDir, setup: p.setup, envAllow: fmt.Sprint(s.envAllow), locked: p.locked}
}

// resolve validates cfg, applies defaults and resolves paths. lookPath
// finds the uv executable.
func resolve(cfg Config, lookPath func(string) (string, error)) (*settings, error) {
	s := &settings{
		python:             cfg.Python,
		outputLimit:        cfg.OutputLimitBytes,
		stderrLimit:        cfg.StderrLimitBytes,
		defaultTimeout:     time.Duration(cfg.DefaultTimeoutMS) * time.Millisecond,
		preparationTimeout: time.Duration(cfg.PreparationTimeoutMS) * time.Millisecond,
		projects:           map[string]project{},
	}
	var errs []error
	if s.outputLimit < 0 || s.stderrLimit < 0 || cfg.DefaultTimeoutMS < 0 || cfg.PreparationTimeoutMS < 0 {
		errs = append(errs, errors.New("limits and timeouts must not be negative"))
	}
	// A time.Duration holds about 292 years; more milliseconds would wrap.
	if cfg.DefaultTimeoutMS > maxTimeoutMS || cfg.PreparationTimeoutMS > maxTimeoutMS {
		errs = append(errs, fmt.Errorf("timeouts must not exceed %d ms", maxTimeoutMS))
		s.defaultTimeout, s.preparationTimeout = 0, 0
	}
	if s.outputLimit == 0 {
		s.outputLimit = DefaultOutputLimitBytes
	}
	if s.stderrLimit == 0 {
		s.stderrLimit = DefaultStderrLimitBytes
	}
	if s.defaultTimeout == 0 {
		s.defaultTimeout = DefaultTimeout
	}
	if s.preparationTimeout == 0 {
		s.preparationTimeout = DefaultPreparationTimeout
	}
	uv := cfg.UV
	if uv == "" {
		uv = "uv"
	}
	if path, err := lookPath(uv); err != nil {
		errs = append(errs, fmt.Errorf("uv executable %q: %w", uv, err))
	} else if abs, err := filepath.Abs(path); err != nil {
		errs = append(errs, fmt.Errorf("uv executable %q: %w", uv, err))
	} else {
		s.uv = abs
	}
	if cfg.CacheDir != "" {
		abs, err := filepath.Abs(cfg.CacheDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("cache_dir: %w", err))
		}
		s.cacheDir = abs
	}
	for _, e := range cfg.EnvAllow {
		if !envNameRE.MatchString(e) {
			errs = append(errs, fmt.Errorf("env_allow: %q is not a variable name (or a prefix ending in *)", e))
		} else if withheldEnv[e] {
			errs = append(errs, fmt.Errorf("env_allow: %s holds the provider's own token and is never passed", e))
		}
	}
	s.envAllow = append(append([]string(nil), DefaultEnvAllow...), cfg.EnvAllow...)
	if len(cfg.Projects) == 0 {
		errs = append(errs, errors.New("projects: at least one project is required"))
	}
	names := make([]string, 0, len(cfg.Projects))
	for name := range cfg.Projects {
		names = append(names, name)
	}
	sort.Strings(names)
	setupByDir := map[string]string{}
	ownerByDir := map[string]string{}
	for _, name := range names {
		p := cfg.Projects[name]
		if !projectNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("projects: %q is not a valid project name", name))
			continue
		}
		if !moduleRE.MatchString(p.Module) {
			errs = append(errs, fmt.Errorf("projects.%s.module: %q is not a Python module name", name, p.Module))
		}
		if p.Setup != "" && !moduleRE.MatchString(p.Setup) {
			errs = append(errs, fmt.Errorf("projects.%s.setup: %q is not a Python module name", name, p.Setup))
		}
		dir, locked, err := projectDir(p.Directory)
		if err != nil {
			errs = append(errs, fmt.Errorf("projects.%s.directory: %w", name, err))
			continue
		}
		if prev, ok := setupByDir[dir]; ok && prev != p.Setup {
			errs = append(errs, fmt.Errorf("projects.%s: shares directory %s with %s but names a different setup module", name, dir, ownerByDir[dir]))
		}
		setupByDir[dir], ownerByDir[dir] = p.Setup, name
		s.projects[name] = project{name: name, dir: dir, setup: p.Setup, module: p.Module, locked: locked}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("pythonuv: invalid configuration: %w", errors.Join(errs...))
	}
	return s, nil
}

// projectDir resolves a project directory, checks that it holds a
// pyproject.toml and a uv.lock (preparation runs uv sync --locked) and
// answers a digest of their content.
func projectDir(dir string) (real, locked string, err error) {
	if dir == "" {
		return "", "", errors.New("is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if real, err = filepath.EvalSymlinks(abs); err != nil {
		return "", "", err
	}
	if locked, err = lockedDigest(real); err != nil {
		return "", "", err
	}
	return real, locked, nil
}

// lockedFiles are the files of a project directory that uv sync --locked
// installs from: a preparation depends on their content.
var lockedFiles = []string{"pyproject.toml", "uv.lock"}

// lockedDigest is a digest of the content of dir's lockedFiles.
func lockedDigest(dir string) (string, error) {
	h := sha256.New()
	for _, f := range lockedFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
