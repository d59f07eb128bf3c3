package workspace

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/providers/internal/serve"
)

// TokenEnv is the environment variable Command reads the bearer token from
// when --token is not given.
const TokenEnv = serve.TokenEnv

// Command implements
//
//	brain env workspace --listen 127.0.0.1:8091 --root DIR (--token T | --no-auth)
//	                    [--allow any|prog,prog] [--output-limit N]
//	                    [--max-bytes N] [--max-files N] [--timeout D] [--release keep|wipe]
//	                    [--max-answer-bytes N]
//
// It serves the provider until ctx ends, then stops gracefully, and returns
// the process exit status. The token may also come from BRAIN_ENV_TOKEN.
// Without one the provider refuses to start, since it would serve a shell
// to anyone who can reach the address, unless --no-auth asks to serve
// without authentication, which is refused on an address that is not
// loopback and warned about on stderr.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brain env workspace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := serve.AddFlags(fs, "127.0.0.1:8091")
	root := fs.String("root", "", "directory holding workspaces and binding state (required)")
	allow := fs.String("allow", AnyCommand, `programs commands may run: "any" or a comma-separated list of names`)
	outputLimit := fs.Int("output-limit", DefaultOutputLimit, "bytes kept of each of stdout and stderr")
	maxBytes := fs.Int64("max-bytes", DefaultMaxBytes, "workspace size limit in bytes (negative: none)")
	maxFiles := fs.Int("max-files", DefaultMaxFiles, "workspace entry limit (negative: none)")
	timeout := fs.Duration("timeout", DefaultCommandTimeout, "timeout of a command without a deadline (negative: none)")
	release := fs.String("release", ReleaseKeep, "what the turn-end method release does: keep or wipe")
	maxAnswer := fs.Int64("max-answer-bytes", envapi.MaxResponseBytes, "largest answer Brain takes (its BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES)")
	if code, ok := serve.Parse(fs, args, stdout); !ok {
		return code
	}
	name := fs.Name()
	if *root == "" {
		fmt.Fprintf(stderr, "%s: --root is required\n", name)
		return 2
	}
	if *release != ReleaseKeep && *release != ReleaseWipe {
		fmt.Fprintf(stderr, "%s: --release %q: give %s or %s\n", name, *release, ReleaseKeep, ReleaseWipe)
		return 2
	}
	// Zero is no bound and not the default either: the operator who
	// wrote it asked for neither, so it is refused.
	for _, b := range []struct {
		flag string
		v    int64
	}{{"--output-limit", int64(*outputLimit)}, {"--max-bytes", *maxBytes}, {"--max-files", int64(*maxFiles)}} {
		if b.v == 0 {
			fmt.Fprintf(stderr, "%s: %s 0: give a positive bound (--max-bytes and --max-files: negative for none)\n", name, b.flag)
			return 2
		}
	}
	if *timeout == 0 {
		fmt.Fprintf(stderr, "%s: --timeout 0: give a positive duration (negative for none)\n", name)
		return 2
	}
	if *maxAnswer < MinAnswerBytes {
		fmt.Fprintf(stderr, "%s: --max-answer-bytes %d: give at least %d, the least that holds an answer\n", name, *maxAnswer, MinAnswerBytes)
		return 2
	}
	if *outputLimit < 0 {
		fmt.Fprintf(stderr, "%s: --output-limit %d: give a positive bound\n", name, *outputLimit)
		return 2
	}
	var commands []string
	if *allow != AnyCommand {
		for _, prog := range strings.Split(*allow, ",") {
			if prog = strings.TrimSpace(prog); prog != "" {
				if !programName(prog) {
					fmt.Fprintf(stderr, "%s: --allow: %q is not a program name: give the base name a command runs it by (git, not /usr/bin/git)\n", name, prog)
					return 2
				}
				commands = append(commands, prog)
			}
		}
		if commands == nil {
			commands = []string{} // allow nothing
		}
	}
	// The serving flags are checked before the root is touched.
	if _, code := sf.Check(stderr); code != 0 {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	p, err := New(Options{
		Root: *root, MaxBytes: *maxBytes, MaxFiles: *maxFiles, OutputLimit: *outputLimit,
		Commands: commands, CommandTimeout: *timeout, Release: *release, MaxAnswerBytes: *maxAnswer, Logger: log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s: --root %s: %v\n", name, *root, err)
		return 1
	}
	defer p.Close()
	ln, token, code := sf.Listen(stderr)
	if ln == nil {
		return code
	}
	return sf.Run(ctx, ln, p.Handler(token), stdout, stderr, "workspace provider", "root "+p.Root())
}
