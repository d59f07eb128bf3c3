// Package cli holds what the example commands share about their command
// lines: the flags of a command that runs a turn (Turn) or serves an
// environment (Serve), the error of a command line a command cannot run,
// and the exit status a shell expects for each outcome.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// UsageError is a command line a command cannot run. Printed says the
// flag package already wrote the error and the usage.
type UsageError struct {
	Err     error
	Printed bool
}

func (e UsageError) Error() string { return e.Err.Error() }

func (e UsageError) Unwrap() error { return e.Err }

// Parse parses args with fs for a command that takes no operands: an
// operand is a mistake (an address without --listen, say), not something
// to ignore.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return UsageError{Err: err, Printed: true}
	}
	if fs.NArg() > 0 {
		return Unexpected(fs.Arg(0))
	}
	return nil
}

// Unexpected is the UsageError of an operand a command takes none of.
func Unexpected(arg string) error {
	return UsageError{Err: fmt.Errorf("unexpected argument %q", arg)}
}

// Exit ends the command name after its work answered err, with the status
// a shell expects: 0 when it succeeded or printed the usage -h asked for,
// 2 for a command line it cannot run, 1 when it failed.
func Exit(name string, err error) {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &ue):
		if !ue.Printed {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
