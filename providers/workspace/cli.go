package workspace

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
)

// TokenEnv is the environment variable Command reads the bearer token from
// when --token is not given.
const TokenEnv = "BRAIN_ENV_TOKEN"

// Command implements
//
//	brain env workspace --listen 127.0.0.1:8091 --root DIR [--token T]
//	                    [--allow any|prog,prog] [--output-limit N]
//	                    [--max-bytes N] [--max-files N] [--timeout D] [--release keep|wipe]
//
// It serves the provider until ctx ends, then stops gracefully, and returns
// the process exit status. The token may also come from BRAIN_ENV_TOKEN;
// without one the provider serves without authentication, which is refused
// on an address that is not loopback.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("brain env workspace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8091", "address to listen on")
	root := fs.String("root", "", "directory holding workspaces and binding state (required)")
	token := fs.String("token", "", "bearer token Brain must present (default $"+TokenEnv+")")
	allow := fs.String("allow", AnyCommand, `programs commands may run: "any" or a comma-separated list of names`)
	outputLimit := fs.Int("output-limit", DefaultOutputLimit, "bytes kept of each of stdout and stderr")
	maxBytes := fs.Int64("max-bytes", DefaultMaxBytes, "workspace size limit in bytes (negative: none)")
	maxFiles := fs.Int("max-files", DefaultMaxFiles, "workspace entry limit (negative: none)")
	timeout := fs.Duration("timeout", DefaultCommandTimeout, "timeout of a command without a deadline (negative: none)")
	release := fs.String("release", ReleaseKeep, "what the turn-end method release does: keep or wipe")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	if *root == "" {
		fmt.Fprintln(stderr, "--root is required")
		return 2
	}
	if *token == "" {
		*token = os.Getenv(TokenEnv)
	}
	var commands []string
	if *allow != AnyCommand {
		for _, name := range strings.Split(*allow, ",") {
			if name = strings.TrimSpace(name); name != "" {
				commands = append(commands, name)
			}
		}
		if commands == nil {
			commands = []string{} // allow nothing
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	p, err := New(Options{
		Root: *root, MaxBytes: *maxBytes, MaxFiles: *maxFiles, OutputLimit: *outputLimit,
		Commands: commands, CommandTimeout: *timeout, Release: *release, Logger: log,
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *token == "" && !isLoopback(ln.Addr()) {
		ln.Close()
		fmt.Fprintf(stderr, "refusing to serve without a token on %s; give --token or $%s\n", ln.Addr(), TokenEnv)
		return 2
	}
	fmt.Fprintf(stdout, "workspace provider listening on http://%s (root %s)\n", ln.Addr(), p.Root())
	if err := envsdk.Serve(ctx, ln, p.Handler(*token)); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
