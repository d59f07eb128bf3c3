package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzBoundedFailure: a provider's failure, any code and message of any
// length with the key echoed anywhere in them, is held as the message
// redacted (see redact) and cut by CutMessage, at most MaxMessageBytes, and its error text
// is what CutMessage makes of the whole text with the whole redacted
// message in it, as the engine records it.
func FuzzBoundedFailure(f *testing.F) {
	f.Add("sk-test-SECRET-7f3a9c", "server_error", "overloaded", uint16(0), uint16(0))
	f.Add("sk-test-SECRET-7f3a9c", "server_error", "сбой sk-test-SECRET-7f3a9c ", uint16(400), uint16(1))
	f.Add("k%2F", "x", "é", uint16(4100), uint16(7))
	f.Add("", "", "😀", uint16(1400), uint16(0))
	f.Fuzz(func(t *testing.T, key, code, part string, repeat, keyEvery uint16) {
		if len(key) > 64 || checkKey(key) != nil || len(part) > 64 {
			return
		}
		tr := transport{key: key}
		var b strings.Builder
		for i := range int(repeat) {
			b.WriteString(part)
			if keyEvery > 0 && i%int(keyEvery) == 0 {
				b.WriteString(key)
			}
		}
		msg := b.String()
		pe := tr.failure(code, msg, true)
		whole := tr.redact(msg)
		if want := CutMessage(whole, len(whole)); pe.Message != want {
			t.Fatalf("message %q, want %q", pe.Message, want)
		}
		text := "model: provider failed: " + pe.Code + ": " + whole
		got := pe.Error()
		if got, want := CutMessage(got, len(got)), CutMessage(text, len(text)); got != want {
			t.Fatalf("error text recorded as %q, want %q", got, want)
		}
		if len(whole) > MaxMessageBytes && (len(got) > MaxMessageBytes || (utf8.ValidString(whole) && utf8.ValidString(pe.Code) && !utf8.ValidString(got))) {
			t.Fatalf("error text of %d bytes (valid UTF-8 %v)", len(got), utf8.ValidString(got))
		}
		if len(pe.Message) > MaxMessageBytes || len(pe.Code) > maxShown+len("...") {
			t.Fatalf("message of %d bytes, code of %d", len(pe.Message), len(pe.Code))
		}
	})
}
