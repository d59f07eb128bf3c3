package pythonuv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/brain-in-go/brain/internal/progress"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// TokenEnv is the environment variable Command reads the bearer token from
// when --token is not given.
const TokenEnv = serve.TokenEnv

// projectFlags collects --project NAME=DIR:MODULE[:SETUP].
type projectFlags map[string]Project

func (p projectFlags) String() string { return "" }

func (p projectFlags) Set(v string) error {
	name, rest, ok := strings.Cut(v, "=")
	parts := strings.Split(rest, ":")
	if !ok || name == "" || len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return errors.New("want NAME=DIR:MODULE[:SETUP]")
	}
	pr := Project{Directory: parts[0], Module: parts[1]}
	if len(parts) == 3 {
		pr.Setup = parts[2]
	}
	p[name] = pr
	return nil
}

// Command implements
//
//	brain env python-uv --listen 127.0.0.1:8092 --config FILE (--token T | --no-auth)
//	                    [--project NAME=DIR:MODULE[:SETUP]]... [--uv PATH]
//	                    [--python REQUEST] [--cache-dir DIR] [--prepare]
//	                    [--state DIR] [--max-answer-bytes N]
//
// Flags override the configuration file; --project adds or replaces a
// project. It prints the URL it serves, serves until ctx ends, then stops
// gracefully, and returns the process exit status. The token may also come
// from BRAIN_ENV_TOKEN; without one it refuses to start unless --no-auth
// asks to serve without authentication, which is refused on an address that
// is not loopback. SIGHUP re-reads the
// configuration (Provider.Reload). --prepare prepares every project at
// start instead of on first use. --state keeps the attached bindings in DIR
// (WithStateDir), so that the provider started again serves them.
// --max-answer-bytes is the largest answer Brain takes (its
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES; default Brain's default, at least
// MinAnswerBytes): a result that would make a larger answer fails with
// output_limit (WithMaxAnswerBytes). What Command writes on its own, a
// command line it refuses or a configuration it cannot serve, begins with
// the command's name; a command line it refuses (exit status 2) leaves
// nothing behind, the state directory included.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brain env python-uv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := serve.AddFlags(fs, "127.0.0.1:8092")
	configPath := fs.String("config", "", "JSON configuration file (see the package documentation)")
	uv := fs.String("uv", "", "uv executable (default: uv on PATH, or the configuration's)")
	python := fs.String("python", "", "interpreter request passed as UV_PYTHON (default: the machine's Python)")
	cacheDir := fs.String("cache-dir", "", "uv cache directory (UV_CACHE_DIR)")
	prepare := fs.Bool("prepare", false, "prepare every project at start")
	state := fs.String("state", "", "directory keeping the attached bindings across restarts (default: in memory)")
	maxAnswer := fs.Int64("max-answer-bytes", 0, "largest answer Brain takes, as its BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES (0: Brain's default)")
	projects := projectFlags{}
	fs.Var(projects, "project", "a project NAME=DIR:MODULE[:SETUP] (repeatable)")
	if code, ok := serve.Parse(fs, args, stdout); !ok {
		return code
	}
	name := fs.Name()
	if *maxAnswer < 0 {
		fmt.Fprintf(stderr, "%s: --max-answer-bytes %d: must not be negative (0: Brain's default)\n", name, *maxAnswer)
		return 2
	}
	if *maxAnswer > 0 && *maxAnswer < MinAnswerBytes {
		fmt.Fprintf(stderr, "%s: --max-answer-bytes %d holds no failure's answer: give at least %d\n", name, *maxAnswer, MinAnswerBytes)
		return 2
	}
	if *configPath == "" && len(projects) == 0 {
		fmt.Fprintf(stderr, "%s: --config or at least one --project is required\n", name)
		return 2
	}
	// The serving flags are checked before the configuration is read and
	// the state directory is made: a command line that cannot run leaves
	// nothing behind.
	if _, code := sf.Check(stderr); code != 0 {
		return code
	}
	load := func() (Config, error) {
		var cfg Config
		if *configPath != "" {
			c, err := LoadConfig(*configPath)
			if err != nil {
				return Config{}, err
			}
			cfg = c
		}
		if cfg.Projects == nil {
			cfg.Projects = map[string]Project{}
		}
		for name, pr := range projects {
			cfg.Projects[name] = pr
		}
		for _, o := range []struct {
			dst *string
			v   string
		}{{&cfg.UV, *uv}, {&cfg.Python, *python}, {&cfg.CacheDir, *cacheDir}} {
			if o.v != "" {
				*o.dst = o.v
			}
		}
		return cfg, nil
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	// Preparation progress: a status line on a terminal, lines otherwise;
	// logs go above the status line.
	prog := progress.For(stderr, "python-uv")
	defer prog.Done()
	log := slog.New(slog.NewTextHandler(prog, nil))
	popts := []Option{WithLogger(log), WithProgress(prog.Report), WithMaxAnswerBytes(*maxAnswer)}
	if *state != "" {
		popts = append(popts, WithStateDir(*state))
	}
	p, err := New(cfg, popts...)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	defer func() {
		if err := p.Close(); err != nil {
			log.Error("provider stop", "error", err)
		}
	}()
	ln, token, code := sf.Listen(stderr)
	if ln == nil {
		return code
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				cfg, err := load()
				if err == nil {
					err = p.Reload(cfg)
				}
				if err != nil {
					log.Error("configuration not reloaded", "error", err)
				} else {
					log.Info("configuration reloaded")
				}
			}
		}
	}()
	if *prepare {
		for name := range cfg.Projects {
			go func() {
				pctx, cancel := context.WithTimeout(ctx, p.preparationTimeout())
				defer cancel()
				if err := p.Prepare(pctx, name); err != nil {
					log.Error("project not prepared", "project", name, "error", err)
				}
			}()
		}
	}

	h := p.Handler(token)
	// Once ctx ends no new operation is accepted; invocations still running
	// are stopped (cancelled) rather than left to outlive the provider.
	defer context.AfterFunc(ctx, func() { _ = p.Close() })()
	bindings := "bindings in memory (--state keeps them across restarts)"
	if p.state != nil {
		bindings = "bindings kept in " + p.state.dir
	}
	projectsText := fmt.Sprintf("%d projects", len(cfg.Projects))
	if len(cfg.Projects) == 1 {
		projectsText = "1 project"
	}
	return sf.Run(ctx, ln, h, stdout, stderr, "python-uv provider", projectsText+", "+bindings)
}

func (p *Provider) preparationTimeout() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.preparationTimeout
}
