package workspace

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A provider whose root lies on an overlayfs mount finds its workspaces
// after the file system is unmounted and mounted again, which gives it
// another device number.
func TestRemountedOverlayIsNoLoss(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlayfs needs root")
	}
	base := t.TempDir()
	merged := filepath.Join(base, "merged")
	for _, d := range []string{"lower", "upper", "work", "merged", "other"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	data := "lowerdir=" + filepath.Join(base, "lower") + ",upperdir=" + filepath.Join(base, "upper") +
		",workdir=" + filepath.Join(base, "work")
	mount := func() {
		t.Helper()
		if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
			t.Skipf("mount an overlayfs: %v", err)
		}
		t.Cleanup(func() { _ = unix.Unmount(merged, 0) })
	}
	mount()
	root := filepath.Join(merged, "root")
	f := newFixture(t, Options{Root: root})
	c, rec := allocated(t, f)
	before := deviceOf(t, root)
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(merged, 0); err != nil {
		t.Fatalf("unmount with the provider closed: %v", err)
	}
	// Another mount takes the device number the overlayfs gave back, as
	// the mounts made in between do on a host that remounts it.
	other := filepath.Join(base, "other")
	if err := unix.Mount("tmpfs", other, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(other, 0) })
	mount()
	if after := deviceOf(t, root); after == before {
		t.Skipf("the overlayfs was mounted again with its device number %d", before)
	}
	if _, err := os.Stat(filepath.Join(root, "workspaces", rec.Dir, "a")); err != nil {
		t.Fatalf("the workspace's file after the remount: %v", err)
	}
	g := newFixture(t, Options{Root: root})
	kept(t, g, c)
}

func deviceOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Dev)
}
