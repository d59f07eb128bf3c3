package fullfs

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a fresh directory and answers it;
// it is unmounted when the test ends. Where mounting is not permitted (not
// Linux, not root, no CAP_SYS_ADMIN) the test is skipped with the reason.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	return MountInodes(t, size, 0)
}

// MountInodes is Mount with at most inodes files and directories on the
// file system (0: tmpfs's default), so that creating one fails with ENOSPC
// once they are used up, whatever space is left.
func MountInodes(t testing.TB, size int64, inodes int) string {
	t.Helper()
	dir := t.TempDir()
	if err := mount(dir, size, inodes); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs to fill (%v); run as root on Linux", err)
	}
	t.Cleanup(func() { _ = unmount(dir) })
	return dir
}

// Filler takes the free space of a mounted file system.
type Filler struct {
	path string
}

// Fill writes a file under dir until the file system answers ENOSPC, so
// that the next write needing a new block fails.
func Fill(t testing.TB, dir string) *Filler {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for chunk := len(buf); chunk > 0; {
		if _, err := f.Write(buf[:chunk]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			chunk /= 2 // take what is left down to the last byte
		}
	}
	return &Filler{path: path}
}

// Free gives the space back.
func (f *Filler) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
}

func mount(dir string, size int64, inodes int) error {
	if runtime.GOOS != "linux" {
		return errors.New("tmpfs mounts are Linux only")
	}
	return doMount(dir, size, inodes)
}

// Leave frees n bytes of the filler, so that small writes (a directory, an
// empty file, a short frame) succeed while larger ones still fail.
func (f *Filler) Leave(t testing.TB, n int64) {
	t.Helper()
	fi, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f.path, max(fi.Size()-n, 0)); err != nil {
		t.Fatal(err)
	}
}

// Inodes are files that take the free inodes of a mounted file system.
type Inodes struct {
	paths []string
}

// TakeInodes creates empty files under dir until the file system answers
// ENOSPC (see MountInodes), so that creating the next file or directory
// fails, whatever space is left.
func TakeInodes(t testing.TB, dir string) *Inodes {
	t.Helper()
	in := &Inodes{}
	for i := 0; ; i++ {
		p := filepath.Join(dir, "inode-"+strconv.Itoa(i))
		f, err := os.Create(p)
		if errors.Is(err, syscall.ENOSPC) {
			return in
		}
		if err != nil {
			t.Fatalf("take the inodes of %s: %v", dir, err)
		}
		f.Close()
		in.paths = append(in.paths, p)
	}
}

// Free gives the inodes back.
func (in *Inodes) Free(t testing.TB) {
	t.Helper()
	for _, p := range in.paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	in.paths = nil
}
