//go:build !linux

package session

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
