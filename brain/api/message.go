package api

import (
	"encoding/json"
	"strings"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleDeveloper = "developer"
)

// Content block types.
const (
	BlockText       = "text"
	BlockImage      = "image"
	BlockFile       = "file"
	BlockNative     = "native"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Media is an image or file the user attaches by URL; Brain never fetches it.
type Media struct {
	Type      string `json:"type"`
	URL       string `json:"url"`
	MediaType string `json:"media_type,omitempty"`
}

// UserInput is what a client sends to start a turn.
type UserInput struct {
	Message string  `json:"message"`
	Media   []Media `json:"media,omitempty"`
}

// Message is one transcript entry.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one of the content variants, discriminated by Type:
// text{Text}, image{URL}, file{MediaType, URL}, native{Format, Data},
// tool_use{ID, Name, Input}, tool_result{ToolUseID, Content, IsError, Media}.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	URL       string          `json:"url,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	Format    string          `json:"format,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   *bool           `json:"is_error,omitempty"`
	Media     []Media         `json:"media,omitempty"`
}

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: BlockText, Text: text} }

// ToolResultBlock returns a tool_result block.
func ToolResultBlock(toolUseID string, content json.RawMessage, isError bool) ContentBlock {
	return ContentBlock{Type: BlockToolResult, ToolUseID: toolUseID, Content: content, IsError: &isError}
}

// UserMessage builds the user message of input.
func UserMessage(in UserInput) Message {
	blocks := []ContentBlock{TextBlock(in.Message)}
	for _, m := range in.Media {
		blocks = append(blocks, ContentBlock{Type: m.Type, URL: m.URL, MediaType: m.MediaType})
	}
	return Message{Role: RoleUser, Content: blocks}
}

// Text concatenates the text blocks of m.
func (m Message) Text() string {
	var s strings.Builder
	for _, b := range m.Content {
		if b.Type == BlockText {
			s.WriteString(b.Text)
		}
	}
	return s.String()
}
