// Package serve holds what the reference provider commands share around
// serving: the --listen, --token and --no-auth flags, the token taken from
// BRAIN_ENV_TOKEN when --token is not given, the refusal to serve without a
// token unless --no-auth says so (and never without one on an address that
// is not loopback), the start line naming the URL, the graceful stop
// when the context ends, and the Gate through which a provider refuses
// operations once its Close has begun and waits for those in flight.
package serve

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/brain-in-go/brain/envsdk"
)

// TokenEnv is the environment variable the bearer token is read from when
// --token is not given.
const TokenEnv = "BRAIN_ENV_TOKEN"

// Flags are the serving flags of a provider command.
type Flags struct {
	name          string // the command's, which its messages begin with
	listen, token *string
	noAuth        *bool
}

// AddFlags defines --listen, defaulting to addr, --token and --no-auth on
// fs. The messages of Listen begin with fs's name, the command's.
func AddFlags(fs *flag.FlagSet, addr string) *Flags {
	return &Flags{
		name:   fs.Name(),
		listen: fs.String("listen", addr, "address to listen on"),
		token:  fs.String("token", "", "bearer token Brain must present (default $"+TokenEnv+"); required unless --no-auth"),
		noAuth: fs.Bool("no-auth", false, "serve without authentication: anyone who can reach the address may run operations (loopback only)"),
	}
}

// Parse parses args with fs and refuses positional arguments. When the
// command must stop it returns false and the exit status: 0 after -help,
// whose usage goes to stdout; 2 for bad usage, explained with the usage on
// fs's output (stderr), as "brain serve" does.
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer) (int, bool) {
	stderr := fs.Output()
	// What the flag package writes while parsing (the usage, and a bad
	// flag's error) goes to stdout or stderr as the outcome says.
	var parseOut bytes.Buffer
	fs.SetOutput(&parseOut)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(parseOut.Bytes())
		return 0, false
	}
	if err != nil {
		_, _ = stderr.Write(parseOut.Bytes())
		return 2, false
	}
	if fs.NArg() > 0 {
		// The word may be a flag's value whose flag was mistyped: show
		// what the command takes.
		fmt.Fprintf(stderr, "%s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2, false
	}
	return 0, true
}

// Listen listens on the --listen address and returns the listener and the
// token (--token, else $BRAIN_ENV_TOKEN), after Check. Without a token it
// refuses to serve on an address that is not loopback. Serving without authentication writes a
// warning to stderr. On failure it writes why to stderr and returns a nil
// listener and the exit status.
func (f *Flags) Listen(stderr io.Writer) (net.Listener, string, int) {
	token, code := f.Check(stderr)
	if code != 0 {
		return nil, "", code
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --listen %s: %v\n", f.name, *f.listen, err)
		return nil, "", 1
	}
	if token == "" {
		if !isLoopback(ln.Addr()) {
			ln.Close()
			fmt.Fprintf(stderr, "%s: refusing to serve without a token on %s (--listen); --no-auth is for loopback only\n", f.name, ln.Addr())
			return nil, "", 2
		}
		fmt.Fprintf(stderr, "%s: warning: serving without authentication on %s (--no-auth): every local user and process may run operations\n", f.name, ln.Addr())
	}
	return ln, token, 0
}

// Check refuses what Listen refuses before it listens: an address without
// a port, a token of only white space, no token without --no-auth and
// --no-auth with one. It writes why to stderr and returns the exit status
// (2), or the token and 0. A command calls it before it opens anything
// else, so that a command line that cannot run leaves nothing behind.
func (f *Flags) Check(stderr io.Writer) (string, int) {
	token := *f.token
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	if _, port, err := net.SplitHostPort(*f.listen); err != nil {
		fmt.Fprintf(stderr, "%s: --listen %q: want host:port: %v\n", f.name, *f.listen, err)
		return "", 2
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		// A port beyond 65535, or a name no service has, is as
		// malformed as a missing one.
		fmt.Fprintf(stderr, "%s: --listen %q: want a port from 0 to 65535 or a service name: %v\n", f.name, *f.listen, err)
		return "", 2
	}
	if token != "" && strings.TrimSpace(token) == "" {
		fmt.Fprintf(stderr, "%s: refusing a token of only white space (--token or $%s)\n", f.name, TokenEnv)
		return "", 2
	}
	if token != "" && *f.noAuth {
		fmt.Fprintf(stderr, "%s: --no-auth contradicts the token given (--token or $%s)\n", f.name, TokenEnv)
		return "", 2
	}
	if token == "" && !*f.noAuth {
		fmt.Fprintf(stderr, "%s: refusing to serve without a token; give --token or $%s, or --no-auth to serve unauthenticated on loopback\n", f.name, TokenEnv)
		return "", 2
	}
	return token, 0
}

// Run writes the start line "NAME listening on http://ADDR (DETAIL)" to
// stdout, serves h on ln until ctx ends, then stops gracefully
// (envsdk.Serve). It returns the exit status; a failure to serve or to
// stop is written to stderr, beginning with the command's name as the
// other messages of f do.
func (f *Flags) Run(ctx context.Context, ln net.Listener, h http.Handler, stdout, stderr io.Writer, name, detail string) int {
	fmt.Fprintf(stdout, "%s listening on http://%s (%s)\n", name, ln.Addr(), detail)
	if err := envsdk.Serve(ctx, ln, h); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f.name, err)
		return 1
	}
	return 0
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
