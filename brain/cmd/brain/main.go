// Command brain runs Brain and its companions: "brain serve" runs the session
// server, "brain env NAME" runs a reference environment provider, and
// "brain conformance" checks a provider against environment/v1.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: brain <command> [flags]

commands:
  serve        run the Brain session server
  env NAME     run a reference environment provider (workspace, docker, python-uv)
  conformance  check an environment provider against environment/v1
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "env":
		return env(ctx, args[1:], stdout, stderr)
	case "conformance":
		return conformanceCmd(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "brain: unknown command %q\n%s", args[0], usage)
	return 2
}
