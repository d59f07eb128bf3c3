package guestjson

import "encoding/binary"

// The string loops look at eight bytes per step while none of them needs
// a closer look, and fall back to one byte per step where one does. In a
// Wasm guest every loop iteration also pays the host's termination check,
// so a step that covers eight bytes costs about what one byte did.

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

// hasLess reports whether a byte of x is below n (n at most 0x80).
func hasLess(x uint64, n byte) bool { return (x-ones*uint64(n))&^x&highs != 0 }

// has reports whether a byte of x is c.
func has(x uint64, c byte) bool {
	y := x ^ ones*uint64(c)
	return (y-ones)&^y&highs != 0
}

// plainOut reports whether AppendString copies the eight bytes of x as
// they are: ASCII, no control character, nothing it escapes.
func plainOut(x uint64) bool {
	return x&highs == 0 && !hasLess(x, 0x20) && !has(x, '"') && !has(x, '\\') &&
		!has(x, '<') && !has(x, '>') && !has(x, '&')
}

// plainIn reports whether Str takes the eight bytes of x as they are
// inside a string: ASCII, no control character, no quote or backslash.
func plainIn(x uint64) bool {
	return x&highs == 0 && !hasLess(x, 0x20) && !has(x, '"') && !has(x, '\\')
}

// plainSkip reports whether the eight bytes of x are inside a string
// with nothing SkipStr checks: no control character, quote or backslash.
func plainSkip(x uint64) bool {
	return !hasLess(x, 0x20) && !has(x, '"') && !has(x, '\\')
}

// plainCompact reports whether AppendCompact copies the eight bytes of x
// as they are inside a string: no quote, backslash, <, >, & or 0xE2 (the
// lead byte of U+2028 and U+2029).
func plainCompact(x uint64) bool {
	return !has(x, '"') && !has(x, '\\') && !has(x, '<') && !has(x, '>') &&
		!has(x, '&') && !has(x, 0xE2)
}
