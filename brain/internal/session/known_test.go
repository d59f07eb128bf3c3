package session

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// roundTrip answers ms as the journal's fold sees them: marshalled into a
// record and decoded back.
func roundTrip(t testing.TB, ms []api.Message) []api.Message {
	t.Helper()
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	var out []api.Message
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func block(b api.ContentBlock) []api.Message {
	return []api.Message{{Role: api.RoleAssistant, Content: []api.ContentBlock{b}}}
}

func TestCanonicalMessages(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		ms   []api.Message
		want bool
	}{
		{"text", []api.Message{api.UserMessage(api.UserInput{Message: "héllo <b> & \u2028"})}, true},
		{"no content", []api.Message{{Role: api.RoleUser}}, true},
		{"empty content", []api.Message{{Role: api.RoleUser, Content: []api.ContentBlock{}}}, true},
		{"tool use", block(api.ContentBlock{Type: api.BlockToolUse, ID: "t1", Name: "echo", Input: json.RawMessage(`{"n":1,"s":"a b\"c\\"}`)}), true},
		{"tool result", block(api.ToolResultBlock("t1", json.RawMessage(`[1,{"x":null}]`), false)), true},
		{"media", block(api.ContentBlock{Type: api.BlockToolResult, IsError: &yes, Media: []api.Media{{Type: "image", URL: "u"}}}), true},
		{"invalid UTF-8 text", block(api.TextBlock("a\xffb")), false},
		{"invalid UTF-8 role", []api.Message{{Role: "us\xe9r"}}, false},
		{"spaced input", block(api.ContentBlock{Type: api.BlockToolUse, Input: json.RawMessage(`{"n": 1}`)}), false},
		{"input on lines", block(api.ContentBlock{Type: api.BlockToolUse, Input: json.RawMessage("[1,\n2]")}), false},
		{"HTML in raw", block(api.ToolResultBlock("t", json.RawMessage(`"<b>"`), false)), false},
		{"ampersand in raw", block(api.ContentBlock{Type: api.BlockNative, Data: json.RawMessage(`"a&b"`)}), false},
		{"line separator in raw", block(api.ContentBlock{Type: api.BlockNative, Data: json.RawMessage("\"a\u2029b\"")}), false},
		{"empty raw", block(api.ContentBlock{Type: api.BlockNative, Data: json.RawMessage{}}), false},
		{"empty media", block(api.ContentBlock{Type: api.BlockToolResult, Media: []api.Media{}}), false},
		{"invalid UTF-8 media", block(api.ContentBlock{Type: api.BlockToolResult, Media: []api.Media{{Type: "image", URL: "\xc3"}}}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := canonicalMessages(c.ms); got != c.want {
				t.Fatalf("canonicalMessages = %v, want %v", got, c.want)
			}
			// Each case is exact: what passes comes back as it is, and
			// what fails would not.
			if same := reflect.DeepEqual(roundTrip(t, c.ms), c.ms); same != c.want {
				t.Fatalf("round trip unchanged = %v, want %v", same, c.want)
			}
		})
	}
}

// FuzzCanonicalMessages holds canonicalMessages to its promise: messages
// it passes come back from the journal's JSON exactly as they are.
func FuzzCanonicalMessages(f *testing.F) {
	f.Add("assistant", "hello", "tool_use", `{"n":1}`, `[1,2]`, "image")
	f.Add("user", "a\xffb", "text", `{"n": 1}`, `"<b>"`, "")
	f.Add("", "", "", "", "", "\u2028")
	f.Fuzz(func(t *testing.T, role, text, typ, input, content, media string) {
		b := api.ContentBlock{Type: typ, Text: text, ID: text, Name: typ, ToolUseID: role}
		if input != "" {
			b.Input = json.RawMessage(input)
		}
		if content != "" {
			b.Content = json.RawMessage(content)
		}
		if media != "" {
			b.Media = []api.Media{{Type: media, URL: text, MediaType: typ}}
		}
		ms := []api.Message{{Role: role, Content: []api.ContentBlock{b}}}
		if _, err := json.Marshal(ms); err != nil {
			return // not a record the engine could build
		}
		if canonicalMessages(ms) && !reflect.DeepEqual(roundTrip(t, ms), ms) {
			t.Fatalf("canonical messages changed by the journal's JSON:\n%#v\n%#v", ms, roundTrip(t, ms))
		}
	})
}

// A loop's messages, canonical or not, and its own slices written after
// it handed them over: the live projection's transcript is the journal's
// fold's, value for value.
func TestLiveFoldKeepsWhatTheJournalHolds(t *testing.T) {
	yes := true
	turns := [][]api.Message{
		{api.UserMessage(api.UserInput{Message: "plain"}), {Role: api.RoleAssistant, Content: []api.ContentBlock{
			{Type: api.BlockToolUse, ID: "t1", Name: "echo", Input: json.RawMessage(`{"n":1}`)}}}},
		{api.UserMessage(api.UserInput{Message: "not UTF-8 \xff"}), {Role: api.RoleAssistant, Content: []api.ContentBlock{
			{Type: api.BlockToolUse, ID: "t2", Name: "echo", Input: json.RawMessage(`{ "n" : 2 }`)}}}},
		{{Role: api.RoleUser, Content: []api.ContentBlock{api.ToolResultBlock("t2", json.RawMessage(`"<b>&"`), true)}},
			{Role: api.RoleAssistant, Content: []api.ContentBlock{{Type: api.BlockToolResult, IsError: &yes, Media: []api.Media{}}}}},
		{{Role: api.RoleAssistant, Content: []api.ContentBlock{}}, {Role: api.RoleUser}},
	}
	var handed [][]api.Message
	loops := map[string]agentloop.Func{"write": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		i := len(handed)
		// A transcript of the loop's own arrays, not the lent one.
		msgs := slices.Clone(in.Transcript)
		for _, m := range turns[i] {
			m.Content = slices.Clone(m.Content)
			msgs = append(msgs, m)
		}
		if _, err := svc.SetTranscript(ctx, msgs); err != nil {
			return api.TurnOutput{}, err
		}
		handed = append(handed, msgs)
		return api.TurnOutput{}, nil
	}}
	h, _ := countingHarness(t, Config{Loops: testLoops(loops)})
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("write")})
	for range turns {
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
			t.Fatal(err)
		}
	}
	// The loop writes over the blocks of the messages it added (those it
	// was given are the state's, lent to it to read).
	for i, msgs := range handed {
		for _, m := range msgs[len(msgs)-len(turns[i]):] {
			for j := range m.Content {
				m.Content[j].Text = "written after"
			}
		}
	}
	_, st := liveAndFolded(t, h, id)
	if n := 2 * len(turns); len(st.Transcript) != n {
		t.Fatalf("the journal's fold holds %d messages, want %d", len(st.Transcript), n)
	}
}
