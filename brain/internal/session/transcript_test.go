package session

import (
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// Transcript deltas append in place, but nothing already handed out
// changes: a holder of the transcript keeps its messages across appends
// and across a rewrite of earlier messages.
func TestTranscriptDeltaKeepsHandedOutMessages(t *testing.T) {
	st := newState()
	msg := func(s string) api.Message { return api.UserMessage(api.UserInput{Message: s}) }
	seq := uint64(1)
	apply := func(d transcriptDelta) {
		r := rec(api.KindTranscriptDelta, d)
		r.Sequence = seq
		seq++
		if err := st.apply(r); err != nil {
			t.Fatal(err)
		}
	}
	apply(delta(nil, []api.Message{msg("a"), msg("b")}))
	held := st.Transcript[:len(st.Transcript):len(st.Transcript)]
	for i := 0; i < 40; i++ {
		apply(delta(st.Transcript, append(held[:len(held):len(held)], msg("c"))))
		held2 := st.Transcript
		apply(delta(st.Transcript, append(append([]api.Message(nil), held2...), msg("d"))))
		if got := held2[len(held2)-1].Content[0].Text; got != "c" {
			t.Fatalf("a held transcript changed: last message %q", got)
		}
		held = st.Transcript
	}
	st.heapBytes() // counts the messages so far
	before := st.Transcript
	last := before[len(before)-1].Content[0].Text
	apply(delta(st.Transcript, []api.Message{msg("x")})) // keeps 0: a rewrite
	if len(st.Transcript) != 1 || st.Transcript[0].Content[0].Text != "x" {
		t.Fatalf("rewrite: %+v", st.Transcript)
	}
	if before[0].Content[0].Text != "a" || before[len(before)-1].Content[0].Text != last {
		t.Fatal("a rewrite changed messages of a held transcript")
	}
	// The heap estimate follows the rewrite.
	if got, want := st.heapBytes(), newStateWith(st.Transcript).heapBytes(); got != want {
		t.Fatalf("heap estimate %d after a rewrite, want %d", got, want)
	}
}

func newStateWith(msgs []api.Message) *state {
	st := newState()
	st.Transcript = append([]api.Message(nil), msgs...)
	return st
}
