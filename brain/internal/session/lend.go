package session

import (
	"slices"

	"github.com/brain-in-go/brain/brain/api"
)

// lendSpare is the spare capacity a lent transcript has at least: room
// for a text turn's messages and a tool round's.
const lendSpare = 8

// lend answers the transcript for an activation's loop with spare
// capacity the loop may append into, as Go's append does: the messages a
// turn adds then reach the saved transcript without a copy of those
// before them (delta compares by the array, extend takes them in place),
// so that a turn costs the same however long the session is. The
// capacity stays the loop's until the activation ends; meanwhile the
// state writes none of it (extend). The array grows as append grows it,
// so the copies it takes are amortised.
func (st *state) lend() []api.Message {
	if cap(st.Transcript)-len(st.Transcript) < lendSpare {
		st.Transcript = slices.Grow(st.Transcript, lendSpare)
	}
	st.lent = true
	return st.Transcript
}

// extend answers the transcript with app appended. While its spare
// capacity is lent, a loop may have appended these very messages there
// itself: they are then taken where they are, not written again; other
// messages go to a new array, so that nothing the loop holds is written
// (and the new array is not lent). Otherwise app is appended in place:
// earlier holders of the transcript see only their own length.
func (st *state) extend(app []api.Message) []api.Message {
	t := st.Transcript
	n := len(t)
	if !st.lent {
		return append(t, app...)
	}
	if cap(t)-n >= len(app) {
		ext := t[n : n+len(app)]
		same := true
		for i := range app {
			if !sameMessage(ext[i], app[i]) {
				same = false
				break
			}
		}
		if same {
			return t[:n+len(app)]
		}
	}
	st.lent = false
	return append(t[:n:n], app...)
}
