package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fsutil"
)

// maxLinks bounds the symbolic links followed in resolving one path, as
// the kernel's own limit does.
const maxLinks = 40

// writeFile writes data to p inside r (named name in failures), creating
// parent directories. Without appendTo it replaces the file whole
// (replaceFile); with appendTo it adds data to the file's end in place,
// and a failed append is cut back to the file's old size.
func writeFile(r *os.Root, p, name string, data []byte, appendTo bool) error {
	if dir := filepath.Dir(p); dir != "." {
		if err := danglingParent(r, dir, name); err != nil {
			return err
		}
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return fsError(name, err)
		}
	}
	if appendTo {
		return appendFile(r, p, name, data)
	}
	return replaceFile(r, p, name, data)
}

// danglingParent refuses a write below a symbolic link that leads to
// nothing (dl/x with dl a link to a missing directory): not_found, naming
// the link, as a read of the path answers it. Creating the parents would
// otherwise fail on the link as a file that exists at one depth, and at
// another create the directory it leads to.
func danglingParent(r *os.Root, dir, name string) error {
	prefix := ""
	for _, c := range strings.Split(filepath.ToSlash(dir), "/") {
		prefix = filepath.Join(prefix, c)
		fi, err := r.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest is created afresh
		}
		if err != nil {
			return fsError(name, err)
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			continue
		}
		if _, err := r.Stat(prefix); errors.Is(err, fs.ErrNotExist) {
			dest, _ := r.Readlink(prefix)
			return envsdk.Failf(envapi.CodeNotFound, "cannot create %s: the symbolic link %s leads to %q, which does not exist", name, prefix, dest).
				WithDetails(map[string]string{"path": envapi.Truncate(name), "link": envapi.Truncate(prefix)})
		} else if err != nil {
			return fsError(name, err)
		}
	}
	return nil
}

// appendFile adds data to the end of p inside r (named name in
// failures), creating the file when there is none. A failed append leaves
// the workspace as it was: a file that existed is cut back to its old
// size, and one the append created is removed.
func appendFile(r *os.Root, p, name string, data []byte) error {
	created := true
	f, fi, err := openRegular(r, p, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if e := (*envsdk.Error)(nil); errors.As(err, &e) && e.Code == envapi.CodeAlreadyExists {
		// The file exists (or p is a link, which is followed).
		created = false
		f, fi, err = openRegular(r, p, name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		if created {
			f.Close()
			_ = r.Remove(p)
		} else {
			_ = f.Truncate(fi.Size())
			f.Close()
		}
		return fsError(name, err)
	}
	if err := f.Close(); err != nil {
		return fsError(name, err)
	}
	return nil
}

// replaceFile replaces the regular file p inside r (named name in
// failures) with data, or creates it, with fsutil.ReplaceIn: data is
// written to a temporary file in the file's directory, synced, given the
// old file's permissions (and, where the provider may, its owner) and
// renamed over it, and the directory is synced. A failure at any point —
// a full disk, the provider killed — leaves the old file as it was; the
// temporary files a provider killed part-way left beside the file are
// removed first. The symbolic links of p are followed, inside the
// workspace only, and the file they lead to is replaced: the links stay.
// Other hard links to the old file keep its old content.
func replaceFile(r *os.Root, p, name string, data []byte) error {
	target, err := resolve(r, p, name)
	if err != nil {
		return err
	}
	var prepare func(*os.File) error
	switch fi, err := r.Lstat(target); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fsError(name, err)
	case fi.IsDir():
		return invalidInput("%s is a directory", name)
	case !fi.Mode().IsRegular():
		return notRegular(name, fi.Mode())
	default:
		// Opening the old file for writing checks, without changing it,
		// that the provider may write it and that it is still a regular
		// file.
		old, ofi, err := openRegular(r, target, name, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		old.Close()
		perm := ofi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		owner, _ := ofi.Sys().(*syscall.Stat_t)
		prepare = func(f *os.File) error {
			if err := keepOwner(f, owner); err != nil {
				return err
			}
			// After the owner: changing it clears the set-id bits.
			return f.Chmod(perm)
		}
	}
	err = fsutil.ReplaceIn(r, target, data, fsutil.ReplaceOptions{Perm: 0o644, Prepare: prepare, RemoveLeftovers: true})
	if err != nil {
		return fsError(name, err)
	}
	return nil
}

// keepOwner gives f the owner and group of the file it replaces where they
// differ and the provider may change them; where it may not, f keeps the
// provider's, as a file the provider creates would.
func keepOwner(f *os.File, owner *syscall.Stat_t) error {
	if owner == nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || (st.Uid == owner.Uid && st.Gid == owner.Gid) {
		return nil
	}
	if err := f.Chown(int(owner.Uid), int(owner.Gid)); err != nil && !errors.Is(err, syscall.EPERM) {
		return err
	}
	return nil
}

// resolve follows the symbolic links in p inside r as opening p would and
// returns the path, free of links, of the file they lead to, which need
// not exist. A link that is absolute or leads outside the workspace is
// path_escape, as os.Root answers it (name is p in failures).
func resolve(r *os.Root, p, name string) (string, error) {
	var done []string
	todo := strings.Split(filepath.ToSlash(p), "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", escaped(name)
			}
			done = done[:len(done)-1]
			continue
		}
		next := filepath.Join(filepath.Join(done...), c)
		fi, err := r.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) && !slices.Contains(todo, "..") {
			return filepath.Join(next, filepath.Join(todo...)), nil
		}
		if err != nil {
			return "", fsError(name, err)
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fsError(name, syscall.ELOOP)
		}
		dest, err := r.Readlink(next)
		if err != nil {
			return "", fsError(name, err)
		}
		if filepath.IsAbs(dest) {
			return "", escaped(name)
		}
		todo = append(strings.Split(dest, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return filepath.Join(done...), nil
}
