package secrets

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealRoundTripAndRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("sk-very-secret-value")
	if err := s.Put(ctx, "ses_a", "model.api_key", secret); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "ses_a", "environment.x.credential", []byte("c")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{keyName, "sessions/ses_a.sealed"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, err %v; want 0600", name, fi.Mode(), err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "sessions", "ses_a.sealed"))
	if bytes.Contains(raw, secret) {
		t.Fatalf("sealed file contains the plaintext")
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get(ctx, "ses_a", "model.api_key"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Get after reopen = %q, %v", got, err)
	}
	if got, _ := s2.Get(ctx, "ses_b", "model.api_key"); got != nil {
		t.Fatalf("Get of unknown session = %q", got)
	}
	if err := s2.DeleteAll(ctx, "ses_a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s2.Get(ctx, "ses_a", "model.api_key"); got != nil {
		t.Fatalf("Get after DeleteAll = %q", got)
	}
}

func TestTamperedAndMovedFilesDoNotUnseal(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, _ := Open(dir)
	s.Put(ctx, "ses_a", "k", []byte("v"))
	p := filepath.Join(dir, "sessions", "ses_a.sealed")
	raw, _ := os.ReadFile(p)
	// Another session's file moved into place does not authenticate.
	os.WriteFile(filepath.Join(dir, "sessions", "ses_b.sealed"), raw, 0o600)
	if _, err := s.Get(ctx, "ses_b", "k"); !errors.Is(err, ErrSealed) {
		t.Fatalf("moved file: %v, want ErrSealed", err)
	}
	raw[len(raw)-1] ^= 1
	os.WriteFile(p, raw, 0o600)
	if _, err := s.Get(ctx, "ses_a", "k"); !errors.Is(err, ErrSealed) {
		t.Fatalf("tampered file: %v, want ErrSealed", err)
	}
	if _, err := s.Get(ctx, "../x", "k"); err == nil {
		t.Fatalf("path-like session id accepted")
	}
	os.WriteFile(filepath.Join(dir, keyName), []byte("short"), 0o600)
	if _, err := Open(dir); !errors.Is(err, ErrKey) {
		t.Fatalf("bad key: %v, want ErrKey", err)
	}
}

// TestKeyFileOthersMayReadIsRefused: a key file whose mode lets other
// users read or write it (a copy restored with the wrong mode) stops Open
// with ErrKey naming the file and the fix; once chmod 600 it opens again
// and still unseals what was sealed.
func TestKeyFileOthersMayReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "ses_a", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, keyName)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o602} {
		if err := os.Chmod(key, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("Open with the key file at %v = %v, want ErrKey naming %s and chmod 600", mode, err, key)
		}
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "ses_a", "k"); err != nil || string(v) != "v" {
		t.Fatalf("Get after the mode was fixed = %q, %v", v, err)
	}
}
