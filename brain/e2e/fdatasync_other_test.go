//go:build !linux

package e2e

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
