package secrets

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// testdata/golden holds a key file and a sealed file written by this
// version. Sealing draws a random nonce, so the bytes are not
// reproducible: the tests check that the golden files still open to the
// same secrets (files written by this version must stay readable), and
// that this version writes the same layout and, under the nonce, the same
// plaintext. After a deliberate format change, regenerate them with
//
//	go test ./brain/internal/secrets -run Golden -update
//
// and keep reading the old files (add them under a new name).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const goldenSession = "golden-session"

var goldenSecrets = map[string][]byte{
	"model_api_key":       []byte("sk-golden-0123456789"),
	"environment:build/1": []byte("token \x00\xff <&>"),
}

// goldenKey is the key of the golden store: bytes 0..31.
func goldenKey() []byte {
	k := make([]byte, keySize)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// goldenStore answers a store in a temporary copy of the golden files.
func goldenStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "server-metadata")
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{keyName, filepath.Join("sessions", goldenSession+".sealed")} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", filepath.Base(name)))
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// unseal opens a sealed file by hand with the golden key, as doc.go
// specifies it.
func unseal(t *testing.T, b []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(goldenKey())
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 4+12+16 || string(b[:4]) != "BRS1" {
		t.Fatalf("sealed file %x does not start with BRS1 and a nonce", b)
	}
	plain, err := aead.Open(nil, b[4:16], b[16:], []byte(goldenSession))
	if err != nil {
		t.Fatalf("unseal: %v", err)
	}
	return plain
}

func TestGoldenSealedFile(t *testing.T) {
	ctx := context.Background()
	if *update {
		dir := filepath.Join(t.TempDir(), "server-metadata")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, keyName), goldenKey(), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range goldenSecrets {
			if err := s.Put(ctx, goldenSession, name, v); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{keyName, filepath.Join("sessions", goldenSession+".sealed")} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", "golden", filepath.Base(name)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	s, dir := goldenStore(t)
	for name, want := range goldenSecrets {
		got, err := s.Get(ctx, goldenSession, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	golden, err := os.ReadFile(filepath.Join(dir, "sessions", goldenSession+".sealed"))
	if err != nil {
		t.Fatal(err)
	}
	plain := unseal(t, golden)
	const wantPlain = `{"environment:build/1":"dG9rZW4gAP8gPCY+","model_api_key":"c2stZ29sZGVuLTAxMjM0NTY3ODk="}`
	if string(plain) != wantPlain {
		t.Errorf("golden plaintext %s, want %s", plain, wantPlain)
	}

	// This version seals the same plaintext in the same layout (the nonce
	// differs).
	name := "model_api_key"
	if err := s.Put(ctx, goldenSession, name, goldenSecrets[name]); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(dir, "sessions", goldenSession+".sealed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(golden) || bytes.Equal(written[4:16], golden[4:16]) {
		t.Errorf("resealed file of %d bytes (nonce %x), want %d bytes and a fresh nonce", len(written), written[4:16], len(golden))
	}
	if got := unseal(t, written); !bytes.Equal(got, plain) {
		t.Errorf("resealed plaintext %s, want %s", got, plain)
	}
}
