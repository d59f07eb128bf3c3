package datadir

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const childEnv = "BRAIN_DATADIR_TEST_CHILD"

// TestMain lets the test binary act as a second process that tries to open
// a data directory.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		d, err := Open(dir)
		if err != nil {
			os.Stdout.WriteString("refused: " + err.Error() + "\n")
			os.Exit(3)
		}
		d.Close()
		os.Stdout.WriteString("opened\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func openInChild(t *testing.T, dir string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.Output()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("child: %v", err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

func TestOpenEmptyInitialises(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	d, err := Open(dir)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer d.Close()
	got, err := os.ReadFile(filepath.Join(dir, "format"))
	if err != nil || string(got) != "brain-data/1\n" {
		t.Fatalf("format = %q, %v; want %q", got, err, "brain-data/1\n")
	}
	if fi, err := os.Stat(d.Path("sessions")); err != nil || !fi.IsDir() {
		t.Fatalf("sessions/ missing: %v", err)
	}
	if p := d.Path("sessions", "x"); p != filepath.Join(dir, "sessions", "x") {
		t.Fatalf("Path = %q", p)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.Path("sessions", "keep"), []byte("x"), 0o600)
	d.Close()
	d, err = Open(dir)
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	defer d.Close()
	if _, err := os.Stat(d.Path("sessions", "keep")); err != nil {
		t.Fatalf("data lost on reopen: %v", err)
	}
}

func TestSecondOpenerRefused(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, code := openInChild(t, dir)
	if code != 3 || !strings.Contains(out, "already in use") {
		t.Fatalf("child with lock held: exit %d, output %q; want refusal saying already in use", code, out)
	}
	// In the same process a second Open is refused too.
	if _, err := Open(dir); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open = %v, want ErrInUse", err)
	}
	d.Close()
	out, code = openInChild(t, dir)
	if code != 0 || !strings.Contains(out, "opened") {
		t.Fatalf("child after Close: exit %d, output %q; want opened", code, out)
	}
}

func TestNonEmptyWithoutMarkerRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
	os.Mkdir(filepath.Join(dir, "photos"), 0o700)
	_, err := Open(dir)
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Open = %v, want ErrNotEmpty", err)
	}
	for _, name := range []string{"notes.txt", "photos"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "format")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("format was written into a foreign directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sessions/ was created in a foreign directory")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(got) != "mine" {
		t.Errorf("foreign file changed: %q", got)
	}
}

func TestFormatMarkerMismatch(t *testing.T) {
	for _, marker := range []string{"brain-data/2\n", "brain-data/1", "something else"} {
		t.Run(marker, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "format"), []byte(marker), 0o600)
			_, err := Open(dir)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("Open = %v, want ErrFormat", err)
			}
			if !strings.Contains(err.Error(), strings.TrimSpace(marker)) {
				t.Errorf("error %q does not name the value found %q", err, marker)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "format")); string(got) != marker {
				t.Errorf("format rewritten to %q", got)
			}
			// The refused directory is unlocked again.
			d, err := Open(dir)
			if err == nil || errors.Is(err, ErrInUse) {
				t.Errorf("reopen = %v, want the format error again", err)
			}
			if d != nil {
				d.Close()
			}
		})
	}
}

// A data directory given as a symbolic link to nothing (its target was
// removed, or is on a file system not mounted) is refused naming the link
// and its target, not with the bare "file exists" of creating it.
func TestDanglingLinkRefusedByName(t *testing.T) {
	dir := t.TempDir()
	link, target := filepath.Join(dir, "data"), filepath.Join(dir, "gone")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	d, err := Open(link)
	if err == nil {
		d.Close()
		t.Fatal("a data directory linked to nothing was opened")
	}
	if msg := err.Error(); !strings.Contains(msg, "symbolic link") || !strings.Contains(msg, target) {
		t.Fatalf("error %q: want it to say the link's target %s does not exist", msg, target)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link's target was created: %v", err)
	}
}

// TestRefusedDirectoryKeepsNoLock: a directory refused as not Brain's is
// left as it was found, without the lock file Open made in it; a lock
// file that was there before is left too.
func TestRefusedDirectoryKeepsNoLock(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
	if _, err := Open(dir); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Open = %v, want ErrNotEmpty", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "notes.txt" {
		t.Errorf("refused directory holds %v, want only notes.txt", names)
	}

	os.WriteFile(filepath.Join(dir, LockName), nil, 0o600)
	if _, err := Open(dir); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Open with a lock file already there = %v, want ErrNotEmpty", err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); err != nil {
		t.Errorf("the lock file that was there before is gone: %v", err)
	}
}
