package workspace

import (
	"context"
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
	"golang.org/x/sys/unix"
)

// maxLinks bounds the symbolic links followed in resolving one path, as
// the kernel's own limit does.
const maxLinks = 40

// writeFile writes data to p inside r (named name in failures), creating
// parent directories. Without appendTo it replaces the file whole
// (replaceFile); with appendTo it adds data to the file's end in place,
// and a failed append is cut back to the file's old size. missing lists
// the parents of p the write creates, deepest first (missingDirs): a
// failed write removes those it made that are still empty, so that it
// leaves the workspace as it found it. The work stops, failing, once ctx
// ends.
func writeFile(ctx context.Context, r *os.Root, p, name string, data []byte, appendTo bool, missing []string) (err error) {
	if dir := filepath.Dir(p); dir != "." {
		if err := danglingParent(ctx, r, dir, name); err != nil {
			return err
		}
		var made []string
		defer func() {
			if err != nil {
				removeCreated(r, made)
			}
		}()
		if made, err = makeDirs(ctx, r, dir, name, missing); err != nil {
			return err
		}
	}
	if appendTo {
		return appendFile(r, p, name, data)
	}
	return replaceFile(ctx, r, p, name, data)
}

// makeDirs creates dir inside r with its missing parents: missing, deepest
// first, one at a time through the directory above each held open,
// stopping, failing, once ctx ends. Without missing it is MkdirAll. It
// answers the directories of missing it made, deepest first, also when
// it fails.
func makeDirs(ctx context.Context, r *os.Root, dir, name string, missing []string) (made []string, err error) {
	if len(missing) == 0 {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, fsError(name, err)
		}
		return nil, nil
	}
	at := r
	if base := filepath.Dir(missing[len(missing)-1]); base != "." {
		d, err := r.OpenRoot(base)
		if err != nil {
			// Changed since missing was found: made as a whole.
			if err := r.MkdirAll(dir, 0o755); err != nil {
				return nil, fsError(name, err)
			}
			return nil, nil
		}
		at = d
	}
	defer func() {
		if at != r {
			at.Close()
		}
	}()
	for i := len(missing) - 1; i >= 0; i-- {
		if err := stopped(ctx, name); err != nil {
			return missing[i+1:], err
		}
		c := filepath.Base(missing[i])
		if err := at.Mkdir(c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return missing[i+1:], fsError(name, err)
		}
		d, err := at.OpenRoot(c)
		if err != nil {
			return missing[i:], fsError(name, err)
		}
		if at != r {
			at.Close()
		}
		at = d
	}
	return missing, nil
}

// traceCreatedRemoval, when set (by a test), is called with each path
// removeCreated looks up, relative to the directory it is looked up in.
var traceCreatedRemoval func(name string)

// removeCreated removes the directories dirs inside r, deepest first, as
// long as they are empty: one that is not (something else wrote into it
// meanwhile) is kept, with the directories above it. dirs is a chain, each
// the parent of the one before it. The chain is gone down once, one name
// at a time, and back up through "..", each directory checked to be the
// one gone down through, so that removing thousands costs a few lookups
// each, not one of every path from the top, and holds three directories
// open at most.
func removeCreated(r *os.Root, dirs []string) {
	if len(dirs) == 0 {
		return
	}
	top := filepath.Dir(dirs[len(dirs)-1])
	if traceCreatedRemoval != nil {
		traceCreatedRemoval(top)
	}
	base, err := r.Open(top)
	if err != nil {
		return
	}
	// chain[i] is the directory i levels below base, named names[i]
	// (names[0] unused).
	names := make([]string, len(dirs)+1)
	for i := 1; i <= len(dirs); i++ {
		names[i] = filepath.Base(dirs[len(dirs)-i])
	}
	type id struct{ dev, ino uint64 }
	ids := make([]id, 0, len(dirs)+1)
	idOf := func(f *os.File) (id, bool) {
		var st unix.Stat_t
		if statFile(f, &st) != nil {
			return id{}, false
		}
		return id{uint64(st.Dev), uint64(st.Ino)}, true
	}
	cur := base
	defer func() { cur.Close() }()
	if d, ok := idOf(base); ok {
		ids = append(ids, d)
	} else {
		return
	}
	for len(ids) <= len(dirs) {
		name := names[len(ids)]
		if traceCreatedRemoval != nil {
			traceCreatedRemoval(name)
		}
		next, err := openDirAt(cur, name)
		if err != nil {
			break
		}
		d, ok := idOf(next)
		if !ok {
			next.Close()
			break
		}
		cur.Close()
		cur = next
		ids = append(ids, d)
	}
	level := len(ids) - 1 // cur's
	if level < len(dirs) {
		// The rest of the chain could not be entered: gone, or not
		// ours to remove.
		err := unix.Unlinkat(int(cur.Fd()), names[level+1], unix.AT_REMOVEDIR)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
	for ; level >= 1; level-- {
		if traceCreatedRemoval != nil {
			traceCreatedRemoval("..")
		}
		parent, err := openDirAt(cur, "..")
		if err != nil {
			return
		}
		if d, ok := idOf(parent); !ok || d != ids[level-1] {
			parent.Close()
			return // moved meanwhile
		}
		cur.Close()
		cur = parent
		err = unix.Unlinkat(int(cur.Fd()), names[level], unix.AT_REMOVEDIR)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// stopped fails a file tool on name whose context ended: timeout at the
// execute's deadline, cancelled on its cancel or once the provider is
// stopping.
func stopped(ctx context.Context, name string) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, envsdk.ErrDeadline), errors.Is(cause, context.DeadlineExceeded):
		return envsdk.Failf(envapi.CodeTimeout, "%s: the execute's deadline expired before the tool was done", name)
	case errors.Is(cause, errStopping):
		return envsdk.Failf(envapi.CodeCancelled, "%s: the tool was stopped: the provider is stopping", name)
	}
	return envsdk.Failf(envapi.CodeCancelled, "%s: the execute was cancelled before the tool was done", name)
}

// danglingParent refuses a write below a symbolic link that leads to
// nothing (dl/x with dl a link to a missing directory): not_found, naming
// the link, as a read of the path answers it. Creating the parents would
// otherwise fail on the link as a file that exists at one depth, and at
// another create the directory it leads to.
func danglingParent(ctx context.Context, r *os.Root, dir, name string) error {
	w := newDirWalk(r)
	defer w.close()
	prefix := ""
	for _, c := range strings.Split(filepath.ToSlash(dir), "/") {
		if err := stopped(ctx, name); err != nil {
			return err
		}
		prefix = filepath.Join(prefix, c)
		fi, err := w.lstat(c)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest is created afresh
		}
		if err != nil {
			return fsError(name, err)
		}
		w.enter(c, fi)
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
func replaceFile(ctx context.Context, r *os.Root, p, name string, data []byte) error {
	target, err := resolve(ctx, r, p, name)
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
func resolve(ctx context.Context, r *os.Root, p, name string) (string, error) {
	w := newDirWalk(r)
	defer w.close()
	var done []string
	todo := strings.Split(filepath.ToSlash(p), "/")
	links := 0
	for len(todo) > 0 {
		if err := stopped(ctx, name); err != nil {
			return "", err
		}
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
			w.move(filepath.Join(done...))
			continue
		}
		fi, err := w.lstat(c)
		if errors.Is(err, fs.ErrNotExist) && !slices.Contains(todo, "..") {
			return filepath.Join(w.path, c, filepath.Join(todo...)), nil
		}
		if err != nil {
			return "", fsError(name, err)
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			done = append(done, c)
			w.enter(c, fi)
			continue
		}
		if links++; links > maxLinks {
			return "", fsError(name, syscall.ELOOP)
		}
		dest, err := w.dir.Readlink(c)
		if err != nil {
			return "", fsError(name, err)
		}
		if filepath.IsAbs(dest) {
			return "", escaped(name)
		}
		todo = append(strings.Split(dest, "/"), todo...)
	}
	return w.path, nil
}
