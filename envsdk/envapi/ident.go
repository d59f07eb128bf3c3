package envapi

import "regexp"

// Contract is the only contract name of this protocol version.
const Contract = "environment/v1"

// MaxMessageLen bounds failure and unknown messages, in characters, as
// the decoders check them; Truncate cuts to that many bytes, which is
// within the bound whatever the characters.
const MaxMessageLen = 4096

// MaxTokenLen bounds a grant token.
const MaxTokenLen = 256

var identifierRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidIdentifier reports whether s is a protocol identifier:
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$.
func ValidIdentifier(s string) bool { return identifierRE.MatchString(s) }

// Truncate shortens s to at most MaxMessageLen bytes without splitting a
// UTF-8 sequence.
func Truncate(s string) string { return cutRunes(s, MaxMessageLen) }

// cutRunes shortens s to at most n bytes without splitting a UTF-8
// sequence.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
