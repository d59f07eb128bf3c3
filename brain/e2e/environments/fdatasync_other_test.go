//go:build !linux

package environments

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
