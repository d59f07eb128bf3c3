package session

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// A loop that appends to the transcript it was lent hands the engine its
// messages where they already are: the saved transcript becomes the
// loop's array, with no copy of the messages before them.
func TestLentTranscriptTakesTheLoopsMessagesInPlace(t *testing.T) {
	st := newStateWith(manyMessages(1000))
	seq := uint64(1)
	lent := st.lend()
	if cap(lent)-len(lent) < lendSpare {
		t.Fatalf("lent %d messages with %d spare, want at least %d", len(lent), cap(lent)-len(lent), lendSpare)
	}
	loop := append(lent, msgText("question"), msgText("answer"))
	d := delta(st.Transcript, loop)
	if d.Keep != 1000 || len(d.Append) != 2 {
		t.Fatalf("delta keeps %d and appends %d, want 1000 and 2", d.Keep, len(d.Append))
	}
	applyDelta(t, st, &seq, d)
	if len(st.Transcript) != 1002 || &st.Transcript[0] != &loop[0] {
		t.Fatal("the saved transcript is not the loop's array: the messages were copied")
	}
	if got := st.Transcript[1001].Content[0].Text; got != "answer" {
		t.Fatalf("last message %q", got)
	}
}

// While the spare capacity is lent, the state writes none of it: other
// messages than the loop's (a Wasm loop's, decoded) go to a new array and
// the loop's own appends stay as it wrote them.
func TestLentTranscriptIsNeverWrittenByTheState(t *testing.T) {
	st := newStateWith(manyMessages(10))
	seq := uint64(1)
	lent := st.lend()
	loop := append(lent, msgText("mine"))
	applyDelta(t, st, &seq, transcriptDelta{Keep: 10, Saved: 10, Append: []api.Message{msgText("theirs")}})
	if got := loop[10].Content[0].Text; got != "mine" {
		t.Fatalf("the state wrote into the lent capacity: the loop's message is now %q", got)
	}
	if got := st.Transcript[10].Content[0].Text; len(st.Transcript) != 11 || got != "theirs" {
		t.Fatalf("saved transcript ends with %q (%d messages)", got, len(st.Transcript))
	}
	if st.lent {
		t.Fatal("the new array is not lent")
	}
	// Appends go in place again once nothing is lent.
	before := &st.Transcript[0]
	applyDelta(t, st, &seq, transcriptDelta{Keep: 11, Saved: 11, Append: []api.Message{msgText("next")}})
	if &st.Transcript[0] != before && cap(st.Transcript) > 12 {
		t.Fatal("an append with nothing lent copied the transcript")
	}
}

// A text turn costs the same however long the session's transcript is:
// the built-in loop gets the transcript with spare capacity and no part
// of the turn copies it. Bytes allocated per turn with 20,000 saved
// messages stay within those of a session with 2 plus a margin far below
// one copy of the transcript (800 KB).
func TestTurnBytesFlatInTranscriptLength(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle, CheckpointEvery: -1}, nil)
	short := h.create(api.CreateSessionRequest{})
	long := h.create(api.CreateSessionRequest{Transcript: manyMessages(20000)})
	perTurn := func(id string) uint64 {
		send := func() {
			if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
				t.Fatal(err)
			}
		}
		send() // the first turn may grow the array it lends
		const turns = 10
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range turns {
			send()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / turns
	}
	s, l := perTurn(short), perTurn(long)
	t.Logf("bytes allocated per turn: %d with 2 messages, %d with 20,000", s, l)
	if l > s+100<<10 {
		t.Fatalf("a turn with 20,000 saved messages allocates %d bytes, against %d with 2: it copies the transcript", l, s)
	}
}

func msgText(s string) api.Message { return api.UserMessage(api.UserInput{Message: s}) }

func manyMessages(n int) []api.Message {
	out := make([]api.Message, n)
	for i := range out {
		out[i] = msgText(fmt.Sprint("m", i))
	}
	return out
}

func applyDelta(t *testing.T, st *state, seq *uint64, d transcriptDelta) {
	t.Helper()
	r := rec(api.KindTranscriptDelta, d)
	r.Sequence = *seq
	*seq++
	if err := st.apply(r); err != nil {
		t.Fatal(err)
	}
}

// A loop's set_transcript is refused when a message it adds has a role
// outside user, assistant and developer, at whatever position, and the
// saved transcript is left as it was.
func TestSetTranscriptRefusesAnAddedMessagesRole(t *testing.T) {
	var got []error
	loops := map[string]agentloop.Func{"roles": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		bad := api.Message{Role: "system", Content: []api.ContentBlock{api.TextBlock("x")}}
		_, err1 := svc.SetTranscript(ctx, append(in.Transcript, api.UserMessage(*in.Input), bad))
		_, err2 := svc.SetTranscript(ctx, []api.Message{bad})
		_, err3 := svc.SetTranscript(ctx, append(in.Transcript, api.UserMessage(*in.Input)))
		got = []error{err1, err2, err3}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("roles"), Transcript: manyMessages(3)})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got[0], ErrInvalid) || !strings.Contains(got[0].Error(), "message 4 has role \"system\"") {
		t.Fatalf("appended bad role: %v", got[0])
	}
	if !errors.Is(got[1], ErrInvalid) || !strings.Contains(got[1].Error(), "message 0") {
		t.Fatalf("rewrite with a bad role: %v", got[1])
	}
	if got[2] != nil {
		t.Fatalf("a valid append was refused: %v", got[2])
	}
	tr, _ := h.engine.Transcript(context.Background(), id)
	if len(tr.Messages) != 4 || tr.Messages[3].Text() != "hi" {
		t.Fatalf("transcript = %+v", tr.Messages)
	}
}
