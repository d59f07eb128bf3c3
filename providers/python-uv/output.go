package pythonuv

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// outputProblem says why out, an invocation's stdout with surrounding
// white space removed, is not one JSON text Brain accepts as a result, or
// answers "". Python's json module writes some texts Brain refuses: NaN
// and Infinity, and an object with a repeated member (a dict holding both
// 1 and "1"); and a module may write bytes that are not UTF-8.
func outputProblem(out []byte) string {
	if len(out) == 0 {
		return "it wrote nothing"
	}
	if !utf8.Valid(out) {
		return fmt.Sprintf("it is not valid UTF-8 (byte %d)", invalidUTF8At(out))
	}
	var v json.RawMessage
	if err := json.Unmarshal(out, &v); err != nil {
		if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
			return fmt.Sprintf("%v (after %d bytes)", syn, syn.Offset)
		}
		return err.Error()
	}
	if at, key, dup := envapi.DuplicateKey(out); dup {
		if at == "" {
			return "duplicate key " + strconv.Quote(key)
		}
		return "duplicate key " + strconv.Quote(key) + " in " + at
	}
	return ""
}

// invalidUTF8At is the offset of the first byte of b that does not start
// a valid UTF-8 encoding, or len(b).
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// runeSuffix is s without the continuation bytes a cut left at its start,
// when s is UTF-8.
func runeSuffix(s string) string {
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}
