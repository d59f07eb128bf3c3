package session

import (
	"slices"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// known is what the engine knows of a record it has just built and folds
// at once, taken by the fold as given instead of decoded back out of the
// record's JSON. It must be what that decoding would answer: the fold of
// the live projection and the fold of the journal are one fold
// (TestLiveFoldIsTheJournalFold).
type known struct {
	// ref is the sequence an effect's end references, when hasRef.
	ref    uint64
	hasRef bool
	// delta is a transcript_delta's payload, whose appended messages
	// passed canonicalMessages.
	delta *transcriptDelta
}

// canonicalMessages reports whether ms come back from json.Marshal and
// json.Unmarshal exactly as they are (reflect.DeepEqual): every string is
// valid UTF-8 (Marshal replaces invalid bytes), every raw JSON value is
// nil when empty (omitempty drops an empty one, which decodes as nil) and
// otherwise already in the compact, HTML-escaped form Marshal writes it
// in, and an empty media list is nil. When it answers false the fold
// decodes the record as the journal's fold does.
func canonicalMessages(ms []api.Message) bool {
	for i := range ms {
		m := &ms[i]
		if !utf8.ValidString(m.Role) {
			return false
		}
		for j := range m.Content {
			if !canonicalBlock(&m.Content[j]) {
				return false
			}
		}
	}
	return true
}

func canonicalBlock(b *api.ContentBlock) bool {
	for _, s := range [...]string{b.Type, b.Text, b.URL, b.MediaType, b.Format, b.ID, b.Name, b.ToolUseID} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	if !compactRaw(b.Data) || !compactRaw(b.Input) || !compactRaw(b.Content) {
		return false
	}
	if b.Media != nil && len(b.Media) == 0 {
		return false
	}
	for _, m := range b.Media {
		if !utf8.ValidString(m.Type) || !utf8.ValidString(m.URL) || !utf8.ValidString(m.MediaType) {
			return false
		}
	}
	return true
}

// compactRaw reports whether raw, a JSON value Marshal accepted, is nil or
// written as Marshal writes a json.RawMessage: no whitespace outside
// strings, and no '<', '>', '&', U+2028 or U+2029 (which it escapes), in
// valid UTF-8 (the bytes are otherwise copied as they are).
func compactRaw(raw []byte) bool {
	if raw == nil {
		return true
	}
	if len(raw) == 0 || !utf8.Valid(raw) {
		return false
	}
	inString, escaped := false, false
	for i, c := range raw {
		switch c {
		case '<', '>', '&':
			return false
		case 0xE2:
			if i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
				return false
			}
		}
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

// cloneBlocks answers ms with each message's content blocks in an array
// of its own, so that a loop that reuses its slices after handing them
// over does not write into the state. Raw values and strings are shared,
// as the loop's messages extend takes in place are.
func cloneBlocks(ms []api.Message) []api.Message {
	for i := range ms {
		if ms[i].Content != nil {
			ms[i].Content = slices.Clone(ms[i].Content)
		}
	}
	return ms
}
