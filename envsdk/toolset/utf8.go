package toolset

import "unicode/utf8"

// IncompleteTail is the length of the unfinished UTF-8 sequence that ends
// data (0 when data ends with a whole character, or with a byte that no
// character could start): the bytes to hold back when output is cut, until
// the rest of the character arrives.
func IncompleteTail(data []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(data); i++ {
		if utf8.RuneStart(data[len(data)-i]) {
			if utf8.FullRune(data[len(data)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}

// TrimCutRune drops from data, a read cut by a limit, the character the
// cut left unfinished, when the rest is text: NewReadOutput then answers
// it as text rather than base64, and the caller continues from the offset
// plus the bytes returned. Data that is not text, or is only the start of
// one character, is answered as it is.
func TrimCutRune(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	if cut := IncompleteTail(data); cut > 0 && cut < len(data) && utf8.Valid(data[:len(data)-cut]) {
		return data[:len(data)-cut]
	}
	return data
}

// RuneCut is how many bytes of data, at most limit, to take without
// splitting a UTF-8 sequence (to cut output into events of a bounded
// size): 0 when limit is too small for the next character. Where data is
// not UTF-8 any cut will do, and limit is answered.
func RuneCut(data []byte, limit int) int {
	if len(data) <= limit {
		return len(data)
	}
	for n := limit; n > 0 && n > limit-utf8.UTFMax; n-- {
		if utf8.RuneStart(data[n]) {
			return n
		}
	}
	if limit < utf8.UTFMax {
		return 0
	}
	return limit
}
