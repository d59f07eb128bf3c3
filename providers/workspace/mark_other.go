//go:build !linux

package workspace

import "errors"

// writeMark and readMark fail where extended attributes are not used:
// identity falls back to inode and creation time.
func writeMark(string, string) error { return errors.ErrUnsupported }

func readMark(string) (string, error) { return "", errors.ErrUnsupported }

// fileHandle is "" where file handles are not read.
func fileHandle(string) string { return "" }
