package model

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
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
