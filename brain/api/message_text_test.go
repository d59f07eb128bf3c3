package api

import (
	"strings"
	"testing"
)

// TestMessageTextJoinsTextBlocks: Text is the message's text blocks
// joined in order, other blocks left out.
func TestMessageTextJoinsTextBlocks(t *testing.T) {
	m := Message{Role: RoleAssistant, Content: []ContentBlock{
		{Type: BlockText, Text: "a"},
		{Type: "tool_call"},
		{Type: BlockText, Text: "bc"},
	}}
	if got := m.Text(); got != "abc" {
		t.Errorf("Text = %q, want %q", got, "abc")
	}
}

// BenchmarkMessageText: an answer of many small text blocks (a streamed
// answer kept delta by delta) is joined in time linear in its length.
func BenchmarkMessageText(b *testing.B) {
	m := Message{Role: RoleAssistant}
	for range 1 << 16 {
		m.Content = append(m.Content, ContentBlock{Type: BlockText, Text: "word "})
	}
	want := strings.Repeat("word ", 1<<16)
	for b.Loop() {
		if m.Text() != want {
			b.Fatal("Text changed what it joins")
		}
	}
}
