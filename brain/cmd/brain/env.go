package main

import (
	"context"
	"fmt"
	"io"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/providers/docker"
	pythonuv "github.com/brain-in-go/brain/providers/python-uv"
	"github.com/brain-in-go/brain/providers/workspace"
)

const envUsage = `usage: brain env <provider> [flags]

providers:
  workspace   directory-backed environments, allocated lazily
  docker      hardened container environments on a Docker Engine ("brain env docker gc" reaps leftovers)
  python-uv   operator-selected Python projects prepared with uv

Each provider requires the bearer token Brain presents (--token or
BRAIN_ENV_TOKEN); --no-auth serves without authentication, on loopback only.
Run "brain env <provider> --help" for the provider's flags.
`

// env runs a reference environment provider.
func env(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, envUsage)
		return 2
	}
	switch args[0] {
	case "workspace":
		return workspace.Command(ctx, args[1:], stdout, stderr)
	case "docker":
		return docker.Command(ctx, args[1:], stdout, stderr)
	case "python-uv":
		return pythonuv.Command(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, envUsage)
		return 0
	}
	fmt.Fprintf(stderr, "brain env: unknown provider %q\n%s", args[0], envUsage)
	return 2
}

// conformanceCmd checks a provider against environment/v1.
func conformanceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return conformance.RunCLI(ctx, args, stdout, stderr)
}
