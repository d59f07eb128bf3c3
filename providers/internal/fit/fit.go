// Package fit keeps the outputs of the standard tool set (envsdk/toolset)
// within the bytes Brain takes of a provider's answer
// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES). JSON may write six bytes for one
// of the output's ("\u003c" for '<', "\u0001" for a control character,
// "\ufffd" for a byte that is not UTF-8), so a read or a command's output
// within a provider's byte cap can still make an answer larger than Brain
// takes; the functions here cut such an output, between characters, to
// what fits, and say so with the output's truncated flag. Tail keeps the
// end of a stream within a provider's byte cap, for the end of stderr.
package fit

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// MaxListBytes is the most a list's output takes as JSON, whatever the
// answer bound: a listing that long is no use to a model.
const MaxListBytes = 8 << 20

// maxReserve is the most of an answer's bytes kept for what surrounds a
// tool's output: the response envelope, and the code, message and
// cleanup evidence of a failure that carries the output in its details.
const maxReserve = 4 << 10

// Room is the most bytes a tool's output may take as JSON in an answer of
// at most maxAnswer bytes (zero or less: envapi.MaxResponseBytes, Brain's
// default): maxAnswer less 4 KiB, or less half of it when it is smaller
// than 8 KiB.
func Room(maxAnswer int64) int {
	if maxAnswer <= 0 {
		maxAnswer = envapi.MaxResponseBytes
	}
	n := int(min(maxAnswer, int64(1)<<40))
	return n - min(maxReserve, n/2)
}

// ListRoom is the most bytes a list's output may take as JSON: Room, and
// at most MaxListBytes.
func ListRoom(maxAnswer int64) int { return min(MaxListBytes, Room(maxAnswer)) }

// asciiLen is what each ASCII byte takes in a JSON string as
// encoding/json writes it (HTML characters escaped).
var asciiLen [utf8.RuneSelf]int

func init() {
	for b := range utf8.RuneSelf {
		raw, _ := json.Marshal(string(rune(b)))
		asciiLen[b] = len(raw) - 2
	}
}

// next answers the length of the character (or byte that is not UTF-8)
// at the start of s, and what it takes in a JSON string.
func next(s []byte) (size, encoded int) {
	if s[0] < utf8.RuneSelf {
		return 1, asciiLen[s[0]]
	}
	r, size := utf8.DecodeRune(s)
	switch {
	case r == utf8.RuneError && size == 1:
		return 1, len(`\ufffd`)
	case r == '\u2028' || r == '\u2029':
		return size, len(`\u2028`)
	}
	return size, size
}

// TextLen is what s takes in a JSON string, without the quotes, as
// encoding/json writes it.
func TextLen(s []byte) int {
	n := 0
	for len(s) > 0 {
		size, enc := next(s)
		n += enc
		s = s[size:]
	}
	return n
}

// TextPrefix is the length of the longest prefix of s, cut between
// characters, that takes at most n bytes in a JSON string.
func TextPrefix(s []byte, n int) int {
	used, i := 0, 0
	for i < len(s) {
		size, enc := next(s[i:])
		if used+enc > n {
			break
		}
		used += enc
		i += size
	}
	return i
}

// encodedLen is what v takes as JSON.
func encodedLen(v any) int {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(raw)
}

// Read answers the read output of data, read from a file of size bytes
// (truncated: data is not the rest of the file), in at most n bytes of
// JSON: data is cut to what fits, between characters when it is text,
// and truncated is then set. The caller continues from the offset plus
// the bytes the content holds. A content that fits in no room at all is
// answered empty.
func Read(data []byte, size int64, truncated bool, n int) toolset.ReadOutput {
	out := toolset.NewReadOutput(data, size, truncated)
	bare := out
	bare.Content = ""
	whole := encodedLen(bare) + len(out.Content)
	if out.Encoding == toolset.EncodingUTF8 {
		whole = encodedLen(bare) + TextLen(data)
	}
	if whole <= n {
		return out
	}
	bare.Truncated = true
	room := max(n-encodedLen(bare), 0)
	var k int
	if utf8.Valid(data) {
		k = TextPrefix(data, room)
	} else {
		// base64 takes 4 bytes for each 3; a cut that leaves text is
		// measured as text.
		k = min(room/4*3, len(data))
		if d := toolset.TrimCutRune(data[:k]); utf8.Valid(d) {
			k = TextPrefix(d, room)
		}
	}
	return toolset.NewReadOutput(toolset.TrimCutRune(data[:k]), size, true)
}

// TextSuffix is the start of the longest suffix of s, cut between
// characters (as TextPrefix reads them, from the start of s), that takes
// at most n bytes in a JSON string.
func TextSuffix(s []byte, n int) int {
	over := TextLen(s) - n
	i := 0
	for i < len(s) && over > 0 {
		size, enc := next(s[i:])
		over -= enc
		i += size
	}
	return i
}

// Command answers out in at most n bytes of JSON: when it takes more, the
// start of stdout and the end of stderr (where a failure says what went
// wrong: a traceback's last line, a compiler's last error) are kept, cut
// between characters, each within half of the room they have or what the
// other leaves, and truncated is set. What one stream cannot use of its
// half (its next character takes more than is left) goes to the other,
// so that a small room still holds some of the output.
func Command(out toolset.CommandOutput, n int) toolset.CommandOutput {
	bare := out
	bare.Stdout, bare.Stderr = "", ""
	so, se := []byte(out.Stdout), []byte(out.Stderr)
	lo, le := TextLen(so), TextLen(se)
	if encodedLen(bare)+lo+le <= n {
		return out
	}
	bare.Truncated = true
	room := max(n-encodedLen(bare), 0)
	roomOut := room - room/2
	if le <= room/2 {
		roomOut = room - le
	}
	// stdout within its share, stderr within what stdout leaves, and
	// stdout again within what stderr leaves.
	k := TextPrefix(so, roomOut)
	j := TextSuffix(se, room-TextLen(so[:k]))
	k = TextPrefix(so, room-TextLen(se[j:]))
	bare.Stdout, bare.Stderr = string(so[:k]), string(se[j:])
	return bare
}

// Entry is what e adds to a list's output as JSON: its encoding and a
// comma.
func Entry(e toolset.Entry) int { return encodedLen(e) + 1 }

// EmptyList is what a list's output without entries takes as JSON.
var EmptyList = encodedLen(toolset.ListOutput{Entries: []toolset.Entry{}})
