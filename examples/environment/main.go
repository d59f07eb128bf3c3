// Command environment is a custom environment/v1 provider written with
// envsdk: a key-value "notes" environment. Every binding owns a notebook,
// allocated lazily on first use, with the tools
//
//	put  {"key", "value"} → {"key", "revision"}   (posts the diagnostic "notes.changed")
//	get  {"key"}          → {"key", "found", "value"?}
//	list {}               → {"keys"}
//	wait {"ms"}           → {"waited_ms"}          (honours deadlines and cancel)
//
// named by the placement implementation {"tool": NAME}, and the methods
// "stats" and "report" (an availability observation through the binding's
// reporter).
//
// Run it and route Brain to it:
//
//	go run ./examples/environment --listen 127.0.0.1:8090 --token s3cret
//	echo '{"notes":{"endpoint":"http://127.0.0.1:8090","api_key":"s3cret"}}' > routes.json
//	go run ./brain/cmd/brain serve --environment-routes-file routes.json
//
// then declare {"name":"notes","driver":"brain","configuration":{"driver":"notes"}}
// in a session's environments and place tools on it (see main_test.go).
// The token may also come from NOTES_TOKEN. Check it with the conformance
// suite: go test ./examples/environment -run Conformance.
//
// SIGINT or SIGTERM stops serving, letting the operations running end
// first: exit 0, or 1 when some still ran 30 s later and were stopped. A
// second signal quits at once, exit 1. A command line it cannot run exits
// 2.
package main

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
	"github.com/brain-in-go/brain/examples/internal/cli"
)

func main() {
	ctx, stop := cli.Signals("environment")
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	cli.Exit("environment", err)
}

// run serves the notes environment until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("environment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8090", "address to listen on")
	// The token is read from the environment after parsing, so that the
	// usage, which shows every flag's default, never shows it.
	token := fs.String("token", "", "bearer token Brain must present (default: NOTES_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return cli.UsageError{Err: err, Printed: true}
	}
	// It takes no operands: one is a mistake (an address without
	// --listen, say), not something to ignore.
	if fs.NArg() > 0 {
		return cli.Unexpected(fs.Arg(0))
	}
	if *token == "" {
		*token = os.Getenv("NOTES_TOKEN")
	}
	if *token == "" {
		return cli.UsageError{Err: errors.New("a token is required (--token or NOTES_TOKEN)")}
	}
	if err := cli.ListenAddr("--listen", *listen); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	h := envsdk.NewHandler(newNotes(log), &envsdk.Options{Token: *token, Logger: log})
	fmt.Fprintf(stdout, "notes environment serving on http://%s\n", ln.Addr())
	if err := envsdk.Serve(ctx, ln, h); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
