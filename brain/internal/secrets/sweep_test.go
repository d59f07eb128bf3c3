package secrets

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSweepRemovesOnlyOrphans: Sweep removes the sealed files of the
// sessions exists does not report and temporary files, and keeps the
// sealed files of existing sessions, of a session sealed since the store
// opened (being created: its journal does not hold it yet) and files
// that are not the store's.
func TestSweepRemovesOnlyOrphans(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ses_live", "ses_orphan"} {
		if err := s.Put(ctx, id, "k", []byte("v-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	sessions := filepath.Join(dir, "sessions")
	foreign := filepath.Join(sessions, "README")
	if err := os.WriteFile(foreign, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(sessions, "ses_dir.sealed"), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(sessions, ".tmp-ses_orphan.sealed-77")
	if err := os.WriteFile(tmp, []byte("BRS1"), 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "ses_new", "k", []byte("v-ses_new")); err != nil {
		t.Fatal(err)
	}
	var asked []string
	removed, err := s.Sweep(ctx, func(id string) bool {
		asked = append(asked, id)
		return id == "ses_live"
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"ses_orphan"}) {
		t.Errorf("Sweep removed %v, want [ses_orphan]", removed)
	}
	if slices.Contains(asked, "ses_new") {
		t.Errorf("Sweep asked whether ses_new, sealed since Open, exists")
	}
	for id, want := range map[string]string{"ses_live": "v-ses_live", "ses_new": "v-ses_new", "ses_orphan": ""} {
		if v, err := s.Get(ctx, id, "k"); err != nil || string(v) != want {
			t.Errorf("Get(%s) after Sweep = %q, %v; want %q", id, v, err, want)
		}
	}
	for _, p := range []string{foreign, filepath.Join(sessions, "ses_dir.sealed")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s after Sweep: %v; want it kept", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary file after Sweep: %v; want it removed", err)
	}
	// One sweep only: a later one keeps what a create seals meanwhile.
	if err := s.Put(ctx, "ses_later", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Sweep(ctx, func(string) bool { return false }); err != nil || len(removed) != 0 {
		t.Errorf("second Sweep = %v, %v; want nothing removed", removed, err)
	}
	if v, _ := s.Get(ctx, "ses_live", "k"); string(v) != "v-ses_live" {
		t.Errorf("ses_live after a second Sweep = %q", v)
	}
}
