package secrets

import (
	"context"
	"errors"
	"os"
	"testing"
)

// FuzzUnseal: the bytes of a sealed file, whatever they are, unseal to
// the secrets sealed for that session or to ErrSealed; never a panic, and
// never another session's secrets.
func FuzzUnseal(f *testing.F) {
	s, err := Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "ses_a", "api_key", []byte("sk-fuzz-secret")); err != nil {
		f.Fatal(err)
	}
	p, _ := s.path("ses_a")
	sealed, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("ses_a", sealed)
	f.Add("ses_b", sealed)
	f.Add("ses_a", sealed[:len(magic)+s.aead.NonceSize()])
	f.Add("ses_a", []byte(magic))
	f.Add("ses_a", []byte{})
	f.Fuzz(func(t *testing.T, session string, b []byte) {
		m, err := s.unseal(session, b)
		if err != nil {
			if !errors.Is(err, ErrSealed) {
				t.Fatalf("unseal error %v, want ErrSealed", err)
			}
			return
		}
		if session != "ses_a" {
			t.Fatalf("session %q unsealed a file sealed for ses_a: %v", session, m)
		}
		if string(m["api_key"]) != "sk-fuzz-secret" || len(m) != 1 {
			t.Fatalf("unsealed %v, want the sealed secret", m)
		}
	})
}
