// Command remote-agentloop serves agentloops remotely over environment/v1,
// written with envsdk: Brain runs each activation of a session whose
// agentloop names this environment as one execute here, and the loop
// reaches Brain only through the services its callback grant lists
// (model, set_transcript, kv_read, kv_put, kv_delete, dispatch, events,
// emit, telemetry, environments).
//
// The execute's implementation names the loop, {"loop": NAME}, resolved
// from a registry of Go functions (loops.go): "memo" answers every message
// through the session's model, keeps the transcript and counts its turns
// in the session's KV. An implementation it does not know is refused as
// unsupported. Its TurnOutput is {"result": ...}.
//
// Run it beside Brain (it binds loopback only: an authoring example, not a
// sandbox for untrusted code):
//
//	go run ./examples/remote-agentloop --listen 127.0.0.1:8091 --token s3cret
//	go run ./brain/cmd/brain serve
//
// then create a session with
//
//	"environments": [{"name":"loops","driver":"http","url":"http://127.0.0.1:8091","credential":"s3cret"}],
//	"agentloop": {"implementation": {"loop":"memo"}, "environment":"loops"}
//
// (see main_test.go). The token may also come from LOOPS_TOKEN.
//
// SIGINT or SIGTERM stops serving, letting the operations running end
// first: exit 0, or 1 when some still ran 30 s later and were stopped. A
// second signal quits at once, exit 1. A command line it cannot run exits
// 2.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/brain-in-go/brain/examples/internal/cli"
)

func main() {
	ctx, stop := cli.Signals("remote-agentloop")
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	cli.Exit("remote-agentloop", err)
}

// run serves the loops until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remote-agentloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s cli.Serve
	s.Flags(fs, "127.0.0.1:8091", "loopback address to listen on", "LOOPS_TOKEN")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	if err := loopbackOnly(s.Listen); err != nil {
		return cli.UsageError{Err: err}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return s.Run(ctx, stdout, log, loops{}, "agentloops")
}

// loopbackOnly refuses a listen address whose host is not a loopback IP
// or "localhost".
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: this example binds loopback only", addr)
	}
	return nil
}
