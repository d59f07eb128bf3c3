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
//   - the inode number, which stands in for the mark where there is none.
//
// The device number is no part of it: the kernel numbers the device of an
// overlayfs or btrfs mount anew at each mount, so that after a remount
// every workspace would seem replaced. Nor is the inode number where the
// mark is read, since overlayfs over layers on several file systems
// (without xino) numbers a directory's inode anew at each mount too.
type identity struct {
	mark  string
	ino   uint64
	birth int64
}

// identity is the identity the record holds of its allocated directory.
func (r *record) identity() identity {
	return identity{mark: r.Mark, ino: r.Ino, birth: r.Birth}
}

// setIdentity records id as the identity of the allocated directory.
func (r *record) setIdentity(id identity) {
	r.Mark, r.Ino, r.Birth = id.mark, id.ino, id.birth
}

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
	return identity{mark: mark, ino: uint64(st.Ino), birth: readBirth(path)}, err == nil, nil
}

// statDir stats a workspace directory without following a link; a test
// replaces it to see the directory as it is seen after a remount.
var statDir func(string) (fs.FileInfo, error) = os.Lstat

// readBirth reads a directory's creation time (birthTime); a test
// replaces it to start the provider where none can be read.
var readBirth = birthTime

// matches reports whether got, the identity of the directory read now
// (markRead as identify answers), is that of the directory allocated as
// want. Evidence is what both sides know: a creation time or a mark that
// cannot be read now says nothing of a replacement.
func (want identity) matches(got identity, markRead bool) bool {
	if want.birth != 0 && got.birth != 0 && got.birth != want.birth {
		return false
	}
	if want.mark != "" && markRead {
		return got.mark == want.mark
	}
	return got.ino == want.ino
}
