package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// usageError is a command line client cannot run. printed says the flag
// package already wrote the error and the usage.
type usageError struct {
	err     error
	printed bool
}

func (e usageError) Error() string { return e.err.Error() }

func (e usageError) Unwrap() error { return e.err }

// exit ends client after run answered err, with the status a shell
// expects: 0 when it succeeded or printed the usage -h asked for, 2 for a
// command line it cannot run, 1 when it failed.
func exit(err error) {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &ue):
		if !ue.printed {
			fmt.Fprintf(os.Stderr, "client: %v\n", err)
		}
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "client: %v\n", err)
	os.Exit(1)
}
