package pythonuv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// jsonSpace is the white space JSON allows around a value (RFC 8259):
// space, tab, line feed and carriage return. Other white space (a form
// feed, a vertical tab, a no-break space) is not JSON.
const jsonSpace = " \t\n\r"

// trimJSONSpace is stdout without the JSON white space around its value.
func trimJSONSpace(stdout []byte) []byte {
	return bytes.Trim(stdout, jsonSpace)
}

// outputProblem says why out, an invocation's stdout with the JSON white
// space around it removed (trimJSONSpace), is not one JSON text Brain
// accepts as a result, or answers "". Python's json module writes some
// texts Brain refuses: NaN and Infinity, and an object with a repeated
// member (a dict holding both 1 and "1"); and a module may write bytes
// that are not UTF-8 or white space that is not JSON's.
func outputProblem(out []byte) string {
	if len(out) == 0 {
		return "it wrote nothing"
	}
	if !utf8.Valid(out) {
		return fmt.Sprintf("it is not valid UTF-8 (byte %d)", invalidUTF8At(out))
	}
	if r, _ := utf8.DecodeRune(out); unicode.IsSpace(r) {
		return fmt.Sprintf("it starts with %U, white space JSON does not allow around the value", r)
	}
	if r, _ := utf8.DecodeLastRune(out); unicode.IsSpace(r) {
		return fmt.Sprintf("it ends with %U, white space JSON does not allow around the value", r)
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
