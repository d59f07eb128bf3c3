package guestjson

import "encoding/binary"

// The string loops look at 32 or 8 bytes per step while none of them needs
// a closer look, and fall back to one byte per step where one does. In a
// Wasm guest every loop iteration also pays the host's termination check,
// so a step over many bytes costs about what one byte did.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// word answers the eight bytes of s from i, little-endian (one load).
func word(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// wordAt answers the eight bytes of b from i, little-endian (one load).
func wordAt(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// less is nonzero when a byte of x is below n (n at most 0x80).
func less(x uint64, n byte) uint64 { return (x - ones*uint64(n)) &^ x & highs }

// is is nonzero when a byte of x is c.
func is(x uint64, c byte) uint64 {
	y := x ^ ones*uint64(c)
	return (y - ones) &^ y & highs
}

// inMask is zero when Str takes the eight bytes of x as they are inside a
// string: ASCII, no control character, no quote or backslash.
func inMask(x uint64) uint64 { return x&highs | less(x, 0x20) | quoteMask(x) }

// quoteMask is zero when none of the eight bytes of x is a quote or a
// backslash.
func quoteMask(x uint64) uint64 { return is(x, '"') | is(x, '\\') }

// htmlMask is zero when none of the eight bytes of x is <, > or &, which
// json.Marshal escapes inside strings.
func htmlMask(x uint64) uint64 { return is(x, '<') | is(x, '>') | is(x, '&') }

// Each plain function answers how many bytes from i, 32 or 8 or none, its
// loop may pass over at once. The masks are written out in full so that
// they compile inline: in a Wasm guest each call is a termination check.

// plainOut: bytes AppendString copies as they are (ASCII, no control
// character, nothing it escapes).
func plainOut(s string, i int) int {
	if i+32 <= len(s) {
		a, b, c, d := word(s, i), word(s, i+8), word(s, i+16), word(s, i+24)
		if inMask(a)|inMask(b)|inMask(c)|inMask(d)|htmlMask(a)|htmlMask(b)|htmlMask(c)|htmlMask(d) == 0 {
			return 32
		}
	}
	if i+8 <= len(s) {
		if a := word(s, i); inMask(a)|htmlMask(a) == 0 {
			return 8
		}
	}
	return 0
}

// plainIn: bytes Str takes as they are inside a string (ASCII, no control
// character, no quote or backslash).
func plainIn(b []byte, i int) int {
	if i+32 <= len(b) && inMask(wordAt(b, i))|inMask(wordAt(b, i+8))|inMask(wordAt(b, i+16))|inMask(wordAt(b, i+24)) == 0 {
		return 32
	}
	if i+8 <= len(b) && inMask(wordAt(b, i)) == 0 {
		return 8
	}
	return 0
}

// plainSkip: bytes SkipStr passes over inside a string (no control
// character, quote or backslash).
func plainSkip(b []byte, i int) int {
	skip := func(x uint64) uint64 { return less(x, 0x20) | quoteMask(x) }
	if i+32 <= len(b) && skip(wordAt(b, i))|skip(wordAt(b, i+8))|skip(wordAt(b, i+16))|skip(wordAt(b, i+24)) == 0 {
		return 32
	}
	if i+8 <= len(b) && skip(wordAt(b, i)) == 0 {
		return 8
	}
	return 0
}

// plainCompact: bytes AppendCompact copies as they are inside a string
// (no quote, backslash, <, >, & or 0xE2, the lead byte of U+2028 and
// U+2029).
func plainCompact(b []byte, i int) int {
	if i+32 <= len(b) {
		w, x, y, z := wordAt(b, i), wordAt(b, i+8), wordAt(b, i+16), wordAt(b, i+24)
		if quoteMask(w)|quoteMask(x)|quoteMask(y)|quoteMask(z)|htmlMask(w)|htmlMask(x)|htmlMask(y)|htmlMask(z)|
			is(w, 0xE2)|is(x, 0xE2)|is(y, 0xE2)|is(z, 0xE2) == 0 {
			return 32
		}
	}
	if i+8 <= len(b) {
		if w := wordAt(b, i); quoteMask(w)|htmlMask(w)|is(w, 0xE2) == 0 {
			return 8
		}
	}
	return 0
}
