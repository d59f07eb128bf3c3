package fsutil

import (
	"errors"
	"fmt"
)

// ErrForeignOwner reports a file another user owns than the one the
// process runs as.
var ErrForeignOwner = errors.New("owned by another user")

type ownerError struct {
	path string
	uid  uint32
	euid int
}

func (e *ownerError) Error() string {
	return fmt.Sprintf("%s is owned by uid %d, not by uid %d that runs the server (chown %d %s)", e.path, e.uid, e.euid, e.euid, e.path)
}

func (e *ownerError) Unwrap() error { return ErrForeignOwner }
