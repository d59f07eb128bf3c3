package model

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

// sseEvent is one event as the reader answers it.
type sseEvent struct {
	Name, Data string
	AtEOF      bool
}

// readEvents answers every event of r and the error that ended them.
func readEvents(r io.Reader) ([]sseEvent, error) {
	s := &sseReader{r: bufio.NewReaderSize(r, 16)}
	var out []sseEvent
	for {
		ev, data, err := s.next()
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{ev, string(data), s.atEOF})
	}
}

// FuzzSSELineEndings reads any bytes as an event stream whose lines end
// with LF, and the same stream with every LF made a CRLF or a lone CR,
// each whole and one byte at a time: all answer the same events, each
// marked alike as closed by the stream's end or not, and end at the
// stream's end.
func FuzzSSELineEndings(f *testing.F) {
	f.Add([]byte(": comment\nevent: a\ndata: {\"x\":\ndata: 1}\n\ndata:no-space\n\nevent: ignored\n\nretry: 10\nid: 7\ndata: last"))
	f.Add([]byte("\ufeffdata: first\n\n\n\ndata: second\n"))
	f.Add([]byte(responsesDialect.render(turn{text: []string{"Hi"}, stop: "end_turn", in: 1, out: 1})))
	f.Add([]byte(anthropicDialect.truncated()))
	f.Fuzz(func(t *testing.T, lf []byte) {
		lf = bytes.ReplaceAll(lf, []byte("\r"), nil)
		want, err := readEvents(bytes.NewReader(lf))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the stream ended with %v, want EOF", err)
		}
		for _, end := range []string{"\n", "\r\n", "\r"} {
			in := bytes.ReplaceAll(lf, []byte("\n"), []byte(end))
			for _, r := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
				got, err := readEvents(r)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%q: the stream ended with %v, want EOF", end, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%q: events %+v, want %+v", end, got, want)
				}
			}
		}
	})
}
