package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// identity tells the workspace directory allocated for a binding from one
// made at its path afterwards (removed and re-created behind the
// provider's back). It holds:
//   - the mark: random digits the provider writes in an extended attribute
//     of the directory (markAttr) when it creates it, which a directory
//     made by anyone else lacks; "" where the file system keeps none;
//   - the creation time in ns, where the file system records it (0 where
//     not): a directory removed and re-created at once often gets the
//     same inode number back, but never the same creation time;
//   - the file handle (name_to_handle_at(2)), where the file system gives
//     one: it holds the inode's generation besides its number, which the
//     file system changes when it hands an inode number out again, and
//     stands in for the mark where there is none (an NFS mount, a tmpfs
//     of a kernel without user extended attributes);
//   - the inode number, which stands in for the mark and the handle where
//     there are neither.
//
// The device number is no part of it: the kernel numbers the device of an
// overlayfs or btrfs mount anew at each mount, so that after a remount
// every workspace would seem replaced. Nor is the inode number where the
// mark is read, since overlayfs over layers on several file systems
// (without xino) numbers a directory's inode anew at each mount too
// (overlayfs gives no handle unless it is mounted with nfs_export, whose
// handles outlive a remount). dev is recorded only for the providers of
// earlier releases, which compare it (see record.Dev).
type identity struct {
	mark   string
	handle string
	ino    uint64
	birth  int64
	dev    uint64
}

// identity is the identity the record holds of its allocated directory.
func (r *record) identity() identity {
	return identity{mark: r.Mark, handle: r.Handle, ino: r.Ino, birth: r.Birth, dev: r.Dev}
}

// setIdentity records id as the identity of the allocated directory.
func (r *record) setIdentity(id identity) {
	r.Mark, r.Handle, r.Ino, r.Birth, r.Dev = id.mark, id.handle, id.ino, id.birth, id.dev
}

// weak reports whether id tells its directory by the inode number alone:
// a directory re-created at its path that gets the inode number back is
// then taken for it.
func (id identity) weak() bool { return id.mark == "" && id.handle == "" && id.birth == 0 }

// identify reads the identity of the directory at path. markRead is false
// when its mark could not be read (the file system keeps no extended
// attributes, or denies reading them): that is no evidence either way, as
// an attribute that is absent is.
func identify(path string) (id identity, markRead bool, err error) {
	fi, err := statDir(path)
	if err != nil {
		return identity{}, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return identity{}, false, fmt.Errorf("%s is not a directory", path)
	}
	mark, err := readMark(path)
	id = identity{mark: mark, handle: readHandle(path), ino: uint64(st.Ino), birth: readBirth(path), dev: uint64(st.Dev)}
	return id, err == nil, nil
}

// statDir stats a workspace directory without following a link; a test
// replaces it to see the directory as it is seen after a remount.
var statDir func(string) (fs.FileInfo, error) = os.Lstat

// readBirth reads a directory's creation time (birthTime); a test
// replaces it to start the provider where none can be read.
var readBirth = birthTime

// readHandle reads a directory's file handle (fileHandle); a test
// replaces it to start the provider where none can be read.
var readHandle = fileHandle

// matches reports whether got, the identity of the directory read now
// (markRead as identify answers), is that of the directory allocated as
// want. Evidence is what both sides know: a creation time, a mark or a
// handle that cannot be read now says nothing of a replacement.
func (want identity) matches(got identity, markRead bool) bool {
	if want.birth != 0 && got.birth != 0 && got.birth != want.birth {
		return false
	}
	if want.mark != "" && markRead {
		return got.mark == want.mark
	}
	if want.handle != "" && got.handle != "" {
		return got.handle == want.handle
	}
	return got.ino == want.ino
}
