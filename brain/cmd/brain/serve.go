package main

import (
	"context"
	"fmt"
	"io"
)

// serve runs the Brain session server.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "brain serve: not yet available in this build")
	return 1
}
