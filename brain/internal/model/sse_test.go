package model

import (
	"bufio"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

func TestSSEReader(t *testing.T) {
	in := ": comment\r\nevent: a\r\ndata: {\"x\":\r\ndata: 1}\r\n\r\n" +
		"data:no-space\n\n" +
		"event: ignored-without-data\n\n" +
		"retry: 10\nid: 7\ndata: last"
	r := &sseReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), maxFrame: 1 << 10}
	want := []struct{ ev, data string }{{"a", "{\"x\":\n1}"}, {"", "no-space"}, {"", "last"}}
	for _, w := range want {
		ev, data, err := r.next()
		if err != nil || ev != w.ev || string(data) != w.data {
			t.Fatalf("got %q %q %v, want %q %q", ev, data, err, w.ev, w.data)
		}
	}
	if _, _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v", err)
	}
}

func TestDeltaSplitKeepsRunes(t *testing.T) {
	text := strings.Repeat("é", 10) // 2 bytes each
	var parts []string
	o := &output{maxDelta: 5, onDelta: func(d Delta) { parts = append(parts, d.Text) }}
	if err := o.text(text); err != nil {
		t.Fatal(err)
	}
	if strings.Join(parts, "") != text {
		t.Fatalf("parts %q", parts)
	}
	for _, p := range parts {
		if len(p) > 5 || !utf8.ValidString(p) {
			t.Fatalf("part %q", p)
		}
	}
}

// TestStreamWithByteOrderMark: a stream that begins with a UTF-8 byte
// order mark (which an event stream may carry, and its readers skip)
// answers as the same stream without it: the mark is not read as part of
// the first field's name, which lost the first event when it began with
// its data (Anthropic's message_start, failing the call as cut short;
// Chat Completions' first text).
func TestStreamWithByteOrderMark(t *testing.T) {
	noNames := regexp.MustCompile(`(?m)^event: .*\n`)
	stop := "stop"
	streams := map[string]struct {
		d    dialect
		body string
	}{
		"anthropic": {anthropicDialect, noNames.ReplaceAllString(renderAnthropic(turn{text: []string{"Hello", " world"}, stop: api.StopEndTurn, in: 10, out: 2}), "")},
		"openai_chat": {chatDialect, chatChunk(map[string]any{"role": "assistant", "content": "Hello"}, nil, nil) +
			chatChunk(map[string]any{"content": " world"}, nil, nil) + chatChunk(map[string]any{}, &stop, nil) + "data: [DONE]\n\n"},
	}
	for name, s := range streams {
		t.Run(name, func(t *testing.T) {
			f, c := open(t, s.d, Limits{})
			f.set(sse("\ufeff" + s.body))
			res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Text() != "Hello world" || res.StopReason != api.StopEndTurn {
				t.Fatalf("result %q %q", res.Message.Text(), res.StopReason)
			}
		})
	}
}
