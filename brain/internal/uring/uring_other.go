//go:build !(linux && (amd64 || arm64))

package uring

import (
	"errors"
	"os"
)

// Ring is unavailable on this system.
type Ring struct{}

// New answers an error wrapping errors.ErrUnsupported.
func New() (*Ring, error) { return nil, errors.ErrUnsupported }

// Fdatasync is never reached: New answers no ring.
func (r *Ring) Fdatasync(f *os.File) (*Flush, error) { return nil, errors.ErrUnsupported }

// Close does nothing.
func (r *Ring) Close() error { return nil }

// Flush is a submitted flush.
type Flush struct{}

// Wait answers errors.ErrUnsupported.
func (fl *Flush) Wait() error { return errors.ErrUnsupported }
