package api

import (
	"encoding/json"
	"testing"
)

// A ModelRequest whose tools are an empty, non-nil list offers no tools;
// one without tools (nil) offers the session's. The two must stay apart
// through encoding/json, as a Go remote loop or host sends them.
func TestModelRequestToolsAbsentOrEmpty(t *testing.T) {
	msgs := []Message{UserMessage(UserInput{Message: "hi"})}
	for _, tc := range []struct {
		name  string
		tools []ToolDefinition
		want  string
	}{
		{"absent", nil, `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"empty", []ToolDefinition{}, `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[]}`},
	} {
		b, err := json.Marshal(ModelRequest{Messages: msgs, Tools: tc.tools})
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, b, tc.want)
		}
		var back ModelRequest
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if (back.Tools == nil) != (tc.tools == nil) {
			t.Errorf("%s: read back as %#v", tc.name, back.Tools)
		}
	}
}
