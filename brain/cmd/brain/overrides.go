package main

import (
	"errors"
	"flag"
)

// variableError is a variable's value that register refuses. A flag
// given on the command line wins over its variable, whose value is then
// never used: flag names that flag.
type variableError struct {
	flag string
	err  error
}

func (e *variableError) Error() string { return e.err.Error() }

func (e *variableError) Unwrap() error { return e.err }

// unlessOverridden answers the refusals among err (as register answers
// them) of the variables whose flag fs was not given.
func unlessOverridden(err error, fs *flag.FlagSet) error {
	if err == nil {
		return nil
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	var kept []error
	for _, e := range errs {
		if ve, ok := e.(*variableError); ok && given[ve.flag] {
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(kept...)
}
