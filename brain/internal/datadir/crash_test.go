package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A process killed during the first Open, after the format marker's
// temporary file was created and before it was renamed into place, leaves
// that temporary file beside .lock. It is Open's own: the next Open
// removes it and initialises the directory instead of refusing it as
// holding foreign files.
func TestFirstOpenCutShortIsCompleted(t *testing.T) {
	for _, content := range []string{"", "brain-da", FormatMarker} {
		t.Run(strings.TrimSpace(content), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			tmp, err := os.CreateTemp(dir, ".tmp-"+FormatName+"-*")
			if err != nil {
				t.Fatal(err)
			}
			tmp.WriteString(content)
			tmp.Close()
			d, err := Open(dir)
			if err != nil {
				t.Fatalf("Open after a first Open cut short = %v", err)
			}
			defer d.Close()
			if got, err := os.ReadFile(filepath.Join(dir, FormatName)); err != nil || string(got) != FormatMarker {
				t.Fatalf("format = %q, %v; want %q", got, err, FormatMarker)
			}
			if _, err := os.Stat(tmp.Name()); !os.IsNotExist(err) {
				t.Errorf("the temporary file is still there: %v", err)
			}
			if fi, err := os.Stat(d.Path(SessionsName)); err != nil || !fi.IsDir() {
				t.Errorf("sessions/ missing: %v", err)
			}
		})
	}
}

// Only the format marker's own temporary files are taken as Open's: a
// directory holding other files is still refused, naming them, and they
// are left alone.
func TestForeignTemporaryFileRefused(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, ".tmp-notes-1")
	os.WriteFile(foreign, []byte("mine"), 0o600)
	ours, _ := os.CreateTemp(dir, ".tmp-"+FormatName+"-*")
	ours.Close()
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), ".tmp-notes-1") {
		t.Fatalf("Open = %v, want ErrNotEmpty naming .tmp-notes-1", err)
	}
	if got, _ := os.ReadFile(foreign); string(got) != "mine" {
		t.Errorf("foreign file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, FormatName)); !os.IsNotExist(err) {
		t.Errorf("format was written into a foreign directory")
	}
}
