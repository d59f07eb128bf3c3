package pythonuv

import (
	"unicode/utf8"

	"github.com/brain-in-go/brain/providers/internal/fit"
)

// MinAnswerBytes is the smallest answer bound (WithMaxAnswerBytes,
// --max-answer-bytes) a provider takes. Below it not even a failure
// without evidence fits, nor the output_limit that replaces an answer too
// large: Brain would refuse every answer but the shortest, and a caller
// would never learn why an execute failed.
const MinAnswerBytes = 1 << 10

// evidenceRoom is the most bytes the text evidence of a failure (the
// stderr tail, the start of an output that is not JSON) may take as JSON
// in an answer of at most maxAnswer bytes (0: Brain's default); the rest
// is kept for the envelope, the code, the message and the other details.
// The cleanup evidence that goes beside it (details.cleanup_error),
// cleanup, takes its share of that room.
func evidenceRoom(maxAnswer int64, cleanup error) int {
	room := fit.Room(maxAnswer)
	if cleanup != nil {
		room -= len(`,"cleanup_error":""`) + fit.TextLen([]byte(cleanup.Error()))
	}
	return max(room, 0)
}

// fitExecution cuts the text evidence of d to take at most room bytes as
// JSON, so that the failure reaches Brain with its evidence rather than
// being replaced by output_limit: the start of stdout and the end of
// stderr are kept, each within half the room or what the other leaves.
func fitExecution(d *ExecutionFailure, room int) {
	so, se := []byte(d.Stdout), []byte(d.Stderr)
	lo, le := fit.TextLen(so), fit.TextLen(se)
	if lo+le <= room {
		return
	}
	roomOut, roomErr := room-room/2, room/2
	switch {
	case lo <= roomOut:
		roomErr = room - lo
	case le <= roomErr:
		roomOut = room - le
	}
	d.Stdout = string(so[:fit.TextPrefix(so, roomOut)])
	var cut bool
	if d.Stderr, cut = textSuffix(d.Stderr, roomErr); cut {
		d.StderrTruncated = true
	}
}

// fitPreparation answers f with its stderr tail cut to take at most room
// bytes as JSON. f is shared by every execute of the directory and is
// not changed.
func fitPreparation(f *PreparationFailure, room int) *PreparationFailure {
	tail, cut := textSuffix(f.Stderr, room)
	if !cut {
		return f
	}
	c := *f
	c.Stderr, c.StderrTruncated = tail, true
	return &c
}

// textSuffix is the longest suffix of s, cut between characters, that
// takes at most n bytes in a JSON string, and whether it is shorter than
// s. s is UTF-8, as every tail is.
func textSuffix(s string, n int) (string, bool) {
	b := []byte(s)
	over := fit.TextLen(b) - n
	if over <= 0 {
		return s, false
	}
	i := 0
	for i < len(b) && over > 0 {
		_, size := utf8.DecodeRune(b[i:])
		over -= fit.TextLen(b[i : i+size])
		i += size
	}
	return s[i:], true
}
