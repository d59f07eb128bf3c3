package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/brain-in-go/brain/envsdk"
)

// Serve is the command line of an example that serves an environment/v1
// provider: the address it listens on and the bearer token Brain must
// present.
type Serve struct {
	Listen, Token string
	tokenEnv      string
}

// Flags adds Serve's flags to fs: --listen, defaulting to listen and
// described by usage, and --token. The token is read from the environment
// variable tokenEnv by Check, after parsing, so that the usage, which
// shows every flag's default, never shows it.
func (s *Serve) Flags(fs *flag.FlagSet, listen, usage, tokenEnv string) {
	s.tokenEnv = tokenEnv
	fs.StringVar(&s.Listen, "listen", listen, usage)
	fs.StringVar(&s.Token, "token", "", "bearer token Brain must present (default: "+tokenEnv+")")
}

// Check takes the token from the environment when --token was not given,
// and refuses serving without one or on an address no listener can take.
func (s *Serve) Check() error {
	if s.Token == "" {
		s.Token = os.Getenv(s.tokenEnv)
	}
	if s.Token == "" {
		return UsageError{Err: fmt.Errorf("a token is required (--token or %s)", s.tokenEnv)}
	}
	return ListenAddr("--listen", s.Listen)
}

// Run serves p on the address until ctx ends, writing "<what> serving on
// http://<address>" to stdout once it listens. Serving ends as
// envsdk.Serve says: the operations running end first.
func (s *Serve) Run(ctx context.Context, stdout io.Writer, log *slog.Logger, p envsdk.Provider, what string) error {
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return err
	}
	h := envsdk.NewHandler(p, &envsdk.Options{Token: s.Token, Logger: log})
	fmt.Fprintf(stdout, "%s serving on http://%s\n", what, ln.Addr())
	if err := envsdk.Serve(ctx, ln, h); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
