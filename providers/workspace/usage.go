package workspace

import (
	"context"
	"io/fs"
	"os"

	"github.com/brain-in-go/brain/envsdk"
)

// CodeLimitExceeded answers a write beyond the workspace's size or file
// count limit, or a command in a workspace already beyond it.
const CodeLimitExceeded = "limit_exceeded"

// usage is a workspace's size: the bytes of its regular files and the
// number of its entries (files, directories, links), the root excluded.
type usage struct {
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
}

// measure sums the usage of the workspace dir. A directory below it that
// cannot be read (a command made it unreadable) or that went away while it
// was walked (a command removing files as it runs) is counted without its
// contents: were it a failure, one such directory would stop every
// command, write and edit, including the command that would put it right.
// The tree is walked by walkTree, one name at a time, so that files
// deeper than the system's limit on a path's length, or on the files a
// process may hold open, are counted too, and no entry's path is built.
// It stops, failing with ctx's cause, once ctx ends.
func measure(ctx context.Context, dir string) (usage, error) {
	var u usage
	r, err := os.OpenRoot(dir)
	if err != nil {
		return u, err
	}
	defer r.Close()
	info, err := r.Stat(".")
	if err != nil {
		return u, err
	}
	err = walkTree(ctx, ".", fs.FileInfoToDirEntry(info),
		func() (*os.File, error) { return r.Open(".") },
		func(parent *os.File, _ entryPath, d fs.DirEntry, err error) error {
			if parent == nil {
				return err // the workspace itself
			}
			if err != nil {
				return nil
			}
			u.Files++
			if d.Type().IsRegular() {
				fi, err := d.Info()
				if err != nil {
					return nil // removed meanwhile
				}
				u.Bytes += fi.Size()
			}
			return nil
		}, nil)
	return u, err
}

// measureWorkspace is the measure inspect takes, which a test replaces to
// run an operation while inspect measures.
var measureWorkspace = measure

// checkLimits fails with limit_exceeded when the workspace, grown by
// addBytes and addFiles, would be beyond the operator's limits.
func (k *call) checkLimits(addBytes int64, addFiles int) error {
	return k.checkLimitsWithin(k.ctx, addBytes, addFiles)
}

// checkLimitsWithin is checkLimits stopping at the end of ctx, which ends
// no later than the execute's context.
func (k *call) checkLimitsWithin(ctx context.Context, addBytes int64, addFiles int) error {
	o := &k.b.p.opts
	if o.MaxBytes < 0 && o.MaxFiles < 0 {
		return nil
	}
	u, err := measure(ctx, k.sp.path)
	if err != nil {
		if serr := stopped(ctx, "."); serr != nil {
			return serr
		}
		return fsError(".", err)
	}
	if o.MaxBytes >= 0 && u.Bytes+addBytes > o.MaxBytes {
		return envsdk.Failf(CodeLimitExceeded, "the workspace would hold %d bytes, beyond its limit of %d", u.Bytes+addBytes, o.MaxBytes).
			WithDetails(map[string]int64{"bytes": u.Bytes + addBytes, "max_bytes": o.MaxBytes})
	}
	if o.MaxFiles >= 0 && u.Files+addFiles > o.MaxFiles {
		return envsdk.Failf(CodeLimitExceeded, "the workspace would hold %d files, beyond its limit of %d", u.Files+addFiles, o.MaxFiles).
			WithDetails(map[string]int{"files": u.Files + addFiles, "max_files": o.MaxFiles})
	}
	return nil
}
