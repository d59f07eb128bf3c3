package envbind

import (
	"strings"
	"testing"
)

// TestPublicURLCarriesNothingButTheBase: the public URL is the base of
// every callback and reporter URL handed to providers, which keep and may
// log them. One with userinfo would hand its credentials to every
// provider; one with a query or a fragment would break every URL built on
// it. Both are refused when configured, by New and by SetPublicURL, and
// the error never quotes the credentials.
func TestPublicURLCarriesNothingButTheBase(t *testing.T) {
	for _, raw := range []string{
		"http://brain:s3cret-pw@127.0.0.1:8080",
		"https://s3cret-pw@brain.example",
		"https://brain.example/?token=s3cret-pw",
		"https://brain.example/base?",
		"https://brain.example/#s3cret-pw",
	} {
		_, err := New(Config{PublicURL: raw, Key: make([]byte, keySize)})
		if err == nil {
			t.Errorf("New with PublicURL %q: accepted", raw)
		} else if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("New with PublicURL %q: the error quotes it: %v", raw, err)
		}
		b := testBinder(t, Config{})
		err = b.SetPublicURL(raw)
		if err == nil {
			t.Errorf("SetPublicURL(%q): accepted", raw)
		} else if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("SetPublicURL(%q): the error quotes it: %v", raw, err)
		}
		if got := b.PublicURL(); got != "http://127.0.0.1:1" {
			t.Errorf("after SetPublicURL(%q) was refused, PublicURL = %q", raw, got)
		}
	}
	for raw, want := range map[string]string{
		"https://brain.example/prefix/": "https://brain.example/prefix",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080",
	} {
		b := testBinder(t, Config{PublicURL: raw})
		if got := b.PublicURL(); got != want {
			t.Errorf("PublicURL %q: got %q, want %q", raw, got, want)
		}
	}
}
