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
	"flag"
	"io"
	"log/slog"
	"os"

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
	var s cli.Serve
	s.Flags(fs, "127.0.0.1:8090", "address to listen on", "NOTES_TOKEN")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return s.Run(ctx, stdout, log, newNotes(log), "notes environment")
}
