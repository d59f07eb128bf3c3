package guestabi

import "unicode/utf8"

// MaxMessage bounds the message of an export's error answer: the host
// records at most this many bytes of it, and a guest sends no more.
const MaxMessage = 4096

// ClipMessage answers the longest prefix of s of at most MaxMessage bytes
// that does not end inside a UTF-8 sequence.
func ClipMessage(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	for i := MaxMessage; i > MaxMessage-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:MaxMessage]
}
