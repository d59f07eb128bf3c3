//go:build !(linux && (amd64 || arm64))

package journal

import (
	"errors"
	"os"
)

func syncfsSupported() bool { return false }

func kernelAtLeast(release string, major, minor int) bool { return false }

func syncfs(f *os.File) error { return errors.ErrUnsupported }
