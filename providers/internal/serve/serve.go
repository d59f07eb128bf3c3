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
	listen, token *string
	noAuth        *bool
}

// AddFlags defines --listen, defaulting to addr, --token and --no-auth on
// fs.
func AddFlags(fs *flag.FlagSet, addr string) *Flags {
	return &Flags{
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
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return 2, false
	}
	return 0, true
}

// Listen listens on the --listen address and returns the listener and the
// token (--token, else $BRAIN_ENV_TOKEN). A token of only white space is
// refused. Without a token it refuses to serve unless --no-auth was given,
// and even then on an address that is not loopback; --no-auth with a token
// is refused as contradictory. Serving without authentication writes a
// warning to stderr. On failure it writes why to stderr and returns a nil
// listener and the exit status.
func (f *Flags) Listen(stderr io.Writer) (net.Listener, string, int) {
	token := *f.token
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	if token != "" && strings.TrimSpace(token) == "" {
		fmt.Fprintln(stderr, "refusing a token of only white space")
		return nil, "", 2
	}
	if token != "" && *f.noAuth {
		fmt.Fprintln(stderr, "--no-auth contradicts the token given (--token or $"+TokenEnv+")")
		return nil, "", 2
	}
	if token == "" && !*f.noAuth {
		fmt.Fprintf(stderr, "refusing to serve without a token; give --token or $%s, or --no-auth to serve unauthenticated on loopback\n", TokenEnv)
		return nil, "", 2
	}
	ln, err := net.Listen("tcp", *f.listen)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, "", 1
	}
	if token == "" {
		if !isLoopback(ln.Addr()) {
			ln.Close()
			fmt.Fprintf(stderr, "refusing to serve without a token on %s; --no-auth is for loopback only\n", ln.Addr())
			return nil, "", 2
		}
		fmt.Fprintf(stderr, "warning: serving without authentication on %s (--no-auth): every local user and process may run operations\n", ln.Addr())
	}
	return ln, token, 0
}

// Run writes the start line "NAME listening on http://ADDR (DETAIL)" to
// stdout, serves h on ln until ctx ends, then stops gracefully
// (envsdk.Serve). It returns the exit status.
func Run(ctx context.Context, ln net.Listener, h http.Handler, stdout, stderr io.Writer, name, detail string) int {
	fmt.Fprintf(stdout, "%s listening on http://%s (%s)\n", name, ln.Addr(), detail)
	if err := envsdk.Serve(ctx, ln, h); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
