package docker

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/progress"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// TokenEnv is the environment variable Command reads the bearer token from
// when --token is not given.
const TokenEnv = serve.TokenEnv

// Handler serves the provider with envsdk; token may be empty only on
// loopback.
func (p *Provider) Handler(token string) http.Handler {
	return envsdk.NewHandler(p, &envsdk.Options{Token: token, Logger: p.log, MaxAnswerBytes: p.maxAnswer})
}

// Command implements
//
//	brain env docker --listen 127.0.0.1:8093 --state DIR (--token T | --no-auth)
//	                 (--profiles FILE | --image IMAGE [profile flags])
//	                 [--gc-older-than D] [--max-answer-bytes N]
//	brain env docker gc --state DIR --older-than D
//
// The first serves the provider until ctx ends, after a GC of the
// instance's leftovers and a kill of the commands an earlier provider
// process left running in the bindings' containers (KillLeftovers), and
// closes it (Close) once ctx ends, which stops the commands that run; the
// second removes leftovers and exits. The first fails to start, touching
// nothing, while another provider serves the state directory (ErrStateInUse);
// the second may run beside it. The token may also come from
// BRAIN_ENV_TOKEN; without one the provider refuses to start unless
// --no-auth asks to serve without authentication, which is refused on a
// non-loopback address.
// --image and its companion flags define the profile "default" when no
// profiles file is given.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gc" {
		return gcCommand(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("brain env docker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := serve.AddFlags(fs, "127.0.0.1:8093")
	state := fs.String("state", "", "directory holding one state file per binding (required)")
	profilesFile := fs.String("profiles", "", "JSON file of named profiles")
	gcOlder := fs.Duration("gc-older-than", 0, "at start, also remove labelled resources older than this (0: only those whose binding is gone)")
	maxAnswer := fs.Int64("max-answer-bytes", envapi.MaxResponseBytes, "largest answer Brain takes (its BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES)")
	var prof Profile
	fs.StringVar(&prof.Image, "image", "", "image of the profile \"default\" (without --profiles)")
	fs.StringVar(&prof.Workspace, "workspace", WorkspaceWrite, "workspace mount of the default profile: read or write")
	fs.StringVar(&prof.User, "user", DefaultUser, "numeric uid:gid commands run as")
	fs.Int64Var(&prof.MemoryMB, "memory-mb", DefaultMemoryMB, "memory limit in MiB")
	fs.Int64Var(&prof.Pids, "pids", DefaultPids, "process limit")
	fs.Float64Var(&prof.CPUs, "cpus", 0, "CPU limit (0: none)")
	fs.StringVar(&prof.Network, "network", DefaultNetwork, "Docker network, or none")
	fs.Int64Var(&prof.TmpfsMB, "tmpfs-mb", DefaultTmpfsMB, "size of /tmp in MiB")
	fs.Int64Var(&prof.OutputBytes, "output-bytes", DefaultOutputBytes, "cap on returned stdout+stderr bytes")
	timeout := fs.Duration("timeout", 0, "timeout of an execute without a deadline (0: none)")
	envAllow := fs.String("env-allow", "", "comma-separated variable names commands may set")
	if code, ok := parse(fs, args, stdout, state); !ok {
		return code
	}
	if *gcOlder < 0 {
		fmt.Fprintln(stderr, "--gc-older-than must not be negative")
		return 2
	}
	if *maxAnswer < MinAnswerBytes {
		fmt.Fprintf(stderr, "--max-answer-bytes %d: give at least %d, the least that holds an answer\n", *maxAnswer, MinAnswerBytes)
		return 2
	}
	var profiles Profiles
	switch {
	case *profilesFile != "" && prof.Image != "":
		fmt.Fprintln(stderr, "give --profiles or --image, not both")
		return 2
	case *profilesFile != "":
		var err error
		if profiles, err = LoadProfiles(*profilesFile); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	case prof.Image != "":
		prof.Timeout = Duration(*timeout)
		for _, n := range strings.Split(*envAllow, ",") {
			if n = strings.TrimSpace(n); n != "" {
				prof.EnvAllow = append(prof.EnvAllow, n)
			}
		}
		profiles = Profiles{DefaultProfileName: prof}
	default:
		fmt.Fprintln(stderr, "give --profiles FILE or --image IMAGE")
		return 2
	}
	// Setup and allocation progress: a status line on a terminal, lines
	// otherwise; logs go above the status line.
	prog := progress.For(stderr, "docker")
	defer prog.Done()
	log := slog.New(slog.NewTextHandler(prog, nil))
	p, err := New(Config{Profiles: profiles, StateDir: *state, Logger: log, Progress: prog.Report, MaxAnswerBytes: *maxAnswer})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// One provider serves a state directory: held until the provider
	// has closed (deferred first, so released last).
	release, err := lockServing(p.store.dir)
	if err != nil {
		_ = p.Close()
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer release()
	defer func() {
		if err := p.Close(); err != nil {
			log.Error("provider stop", "error", err)
		}
	}()
	// A profile the Engine cannot run is refused before anything is
	// served; an Engine that cannot be asked now leaves it to setup.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = p.CheckProfiles(cctx)
	cancel()
	switch {
	case errors.Is(err, ErrProfileBeyondEngine):
		fmt.Fprintln(stderr, err)
		return 2
	case err != nil:
		log.Warn("profiles not checked against the Engine; setup checks them", "error", err)
	}
	ln, token, code := sf.Listen(stderr)
	if ln == nil {
		return code
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	rep, err := p.GC(gctx, *gcOlder)
	cancel()
	if err != nil {
		log.Warn("gc at start", "error", err)
	} else if len(rep.Containers)+len(rep.Volumes)+len(rep.Skipped) > 0 {
		log.Info("gc at start", "containers", rep.Containers, "volumes", rep.Volumes, "skipped", rep.Skipped)
	}
	// Nothing of this process runs yet: what runs in the bindings'
	// containers was started by an earlier one, which is gone.
	kctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = p.KillLeftovers(kctx)
	cancel()
	if err != nil {
		log.Warn("commands of an earlier provider process", "error", err)
	}
	// Once ctx ends no operation is accepted any more, and the commands
	// that run are stopped rather than left to outlive the provider.
	defer context.AfterFunc(ctx, func() { _ = p.Close() })()
	return sf.Run(ctx, ln, p.Handler(token), stdout, stderr, "docker provider",
		"state "+p.store.dir+", profiles "+strings.Join(profiles.Names(), ", "))
}

func gcCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brain env docker gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "the provider's state directory (required)")
	older := fs.Duration("older-than", 0, "also remove labelled resources older than this (0: only those whose binding is gone)")
	if code, ok := parse(fs, args, stdout, state); !ok {
		return code
	}
	if *older < 0 {
		fmt.Fprintln(stderr, "--older-than must not be negative")
		return 2
	}
	p, err := newProvider(Config{StateDir: *state}, false)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	rep, err := p.GC(ctx, *older)
	_ = json.NewEncoder(stdout).Encode(rep)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// parse parses a command's flags (the usage of -h on stdout); --state is
// required.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer, state *string) (int, bool) {
	if code, ok := serve.Parse(fs, args, stdout); !ok {
		return code, false
	}
	if *state == "" {
		fmt.Fprintln(fs.Output(), "--state is required")
		return 2, false
	}
	return 0, true
}
