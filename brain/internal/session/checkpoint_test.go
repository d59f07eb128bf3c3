package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// The checkpoint's encoding reuses what it encoded of the transcript
// before; it must stay, byte for byte, json.Marshal of the projection
// through appends, rewrites that keep fewer messages than were encoded,
// a rewrite to nothing, and a reload from the checkpoint itself.
func TestCheckpointEncodingIsMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	texts := []string{"hello", "<b>&amp;</b> \u2028 é 漢字", "quote \" backslash \\ tab \t", ""}
	message := func(i int) api.Message {
		switch i % 3 {
		case 0:
			return api.UserMessage(api.UserInput{Message: texts[rng.IntN(len(texts))] + fmt.Sprint(i)})
		case 1:
			return api.Message{Role: "assistant", Content: []api.ContentBlock{
				{Type: "text", Text: texts[rng.IntN(len(texts))]},
				// Raw JSON with spaces: the encoding compacts it.
				{Type: "tool_use", ID: fmt.Sprint("t", i), Name: "echo", Input: json.RawMessage(`{ "a" : [1, 2, "<x>"] }`)},
			}}
		default:
			return api.Message{Role: "user", Content: []api.ContentBlock{
				{Type: "tool_result", ToolUseID: fmt.Sprint("t", i-1), Content: json.RawMessage(`[ {"type":"text","text":"ok"} ]`)},
			}}
		}
	}
	st := newState()
	seq := uint64(0)
	fold := func(kind string, payload any) {
		t.Helper()
		seq++
		r := rec(kind, payload)
		r.Sequence, r.RecordedAtMs = seq, int64(1000+seq)
		if err := st.apply(r); err != nil {
			t.Fatalf("apply %s at %d: %v", kind, seq, err)
		}
	}
	check := func(when string) {
		t.Helper()
		want, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s (record %d, %d messages): encode differs from json.Marshal\n got %s\nwant %s", when, seq, len(st.Transcript), got, want)
		}
	}
	fold(api.KindSessionCreationStarted, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}})
	check("created, no transcript")
	fold(api.KindSessionCreationEnded, struct{}{})
	rewrites := 0
	for i := 0; i < 400; i++ {
		n := len(st.Transcript)
		switch r := rng.IntN(20); {
		case r == 0 && n > 0:
			// A rewrite keeping fewer messages than were encoded.
			keep := rng.IntN(n)
			fold(api.KindTranscriptDelta, transcriptDelta{Keep: keep, Saved: n, Append: []api.Message{message(i)}})
			rewrites++
		case r == 1:
			fold(api.KindKVSet, map[string]any{"key": fmt.Sprint("k", i%5), "value": json.RawMessage(`{"n": ` + fmt.Sprint(i) + `}`)})
		case r == 2 && n > 0 && i > 300:
			fold(api.KindTranscriptDelta, transcriptDelta{Keep: 0, Saved: n})
			rewrites++
		default:
			app := make([]api.Message, 1+rng.IntN(3))
			for k := range app {
				app[k] = message(i + k)
			}
			fold(api.KindTranscriptDelta, transcriptDelta{Keep: n, Saved: n, Append: app})
		}
		if rng.IntN(3) == 0 {
			check(fmt.Sprint("step ", i))
		}
	}
	check("last step")
	if rewrites < 10 {
		t.Fatalf("only %d rewrites exercised", rewrites)
	}
	// A projection loaded from its checkpoint encodes the same again.
	b, _ := st.encode()
	c := newState()
	if err := json.Unmarshal(b, c); err != nil {
		t.Fatal(err)
	}
	again, _ := c.encode()
	if !bytes.Equal(again, b) {
		t.Fatalf("reloaded projection encodes differently:\n got %s\nwant %s", again, b)
	}
	st = c
	fold(api.KindTranscriptDelta, transcriptDelta{Keep: len(c.Transcript), Saved: len(c.Transcript), Append: []api.Message{message(1)}})
	check("after a reload")
}

// BenchmarkCheckpointEncode prices the checkpoint of a session of 1,000
// turns (3,000 messages) whose previous checkpoint was one turn earlier:
// json.Marshal of the whole projection, as checkpoints were encoded, and
// encode, which encodes only the last turn's messages.
//
//	go test ./brain/internal/session -run '^$' -bench CheckpointEncode
func BenchmarkCheckpointEncode(b *testing.B) {
	st := newState()
	seq := uint64(0)
	apply := func(r journal.Record) {
		seq++
		r.Sequence = seq
		if err := st.apply(r); err != nil {
			b.Fatal(err)
		}
	}
	apply(rec(api.KindSessionCreationStarted, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}))
	for i := range 1000 {
		if i == 999 {
			if _, err := st.encode(); err != nil {
				b.Fatal(err)
			}
		}
		n := len(st.Transcript)
		apply(rec(api.KindTranscriptDelta, transcriptDelta{Keep: n, Saved: n, Append: []api.Message{
			api.UserMessage(api.UserInput{Message: "what is the weather in Lisbon today?"}),
			{Role: "assistant", Content: []api.ContentBlock{{Type: "tool_use", ID: fmt.Sprint("t", n), Name: "weather", Input: json.RawMessage(`{"city":"Lisbon"}`)}}},
			{Role: "user", Content: []api.ContentBlock{{Type: "tool_result", ToolUseID: fmt.Sprint("t", n), Content: json.RawMessage(`[{"type":"text","text":"sunny, 21 °C"}]`)}}},
		}}))
	}
	encoded, msgs := len(st.enc), st.encMsgs
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			// The previous checkpoint covered 999 turns.
			st.enc, st.encMsgs = st.enc[:encoded], msgs
			if _, err := st.encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
