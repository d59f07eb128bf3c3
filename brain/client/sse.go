package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// maxSSELine bounds one line of a server-sent event stream, and the data
// of one event (an event's data is one line on Brain's streams).
const maxSSELine = 80 << 20

// lineBound answers the bound of a line of the client's streams.
func (c *Client) lineBound() int {
	if c.maxLine > 0 {
		return c.maxLine
	}
	return maxSSELine
}

// scanSSE reads server-sent events from r and hands each to fn: its id,
// its event name and its data, the data lines joined with "\n". A field's
// value loses one leading space; lines end with CRLF, LF or CR; comments
// and unknown fields are skipped; an event without data is not handed
// on. Unlike a browser's EventSource, an id holds for its own event only:
// Brain marks a journaled event with an id and a live frame without one.
// scanSSE stops at the first error fn answers, at a read error, at a line
// or an event's data longer than maxSSELine (bufio.ErrTooLong), or at the
// end of r (io.ErrUnexpectedEOF: Brain never ends a stream it keeps
// open).
func scanSSE(r io.Reader, fn func(id, event string, data []byte) error) error {
	return scanSSEMax(r, maxSSELine, fn)
}

// scanSSEMax is scanSSE with lines and data bounded by maxLine bytes.
func scanSSEMax(r io.Reader, maxLine int, fn func(id, event string, data []byte) error) error {
	return scanFrames(r, maxLine, false, func(id, event string, data []byte, _ bool) error {
		return fn(id, event, data)
	})
}

// scanSSECut is scanSSEMax for a stream that goes on past an event longer
// than maxLine: such an event is handed to fn with cut set and the first
// maxLine bytes of its data, and the rest of a longer line is read and
// dropped.
func scanSSECut(r io.Reader, maxLine int, fn func(id, event string, data []byte, cut bool) error) error {
	return scanFrames(r, maxLine, true, fn)
}

// scanFrames is scanSSEMax, and scanSSECut when keepCut is set.
func scanFrames(r io.Reader, maxLine int, keepCut bool, fn func(id, event string, data []byte, cut bool) error) error {
	sc := bufio.NewScanner(r)
	// Two bytes beyond the bound hold a line of maxLine bytes and its
	// CRLF: a buffer that fills without a line's end holds a longer line.
	sc.Buffer(make([]byte, min(64<<10, maxLine+2)), maxLine+2)
	lines := &lineSplitter{max: maxLine}
	sc.Split(lines.split)
	var id, event string
	var data []byte
	has, cut := false, false
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case lines.dropped:
			continue
		case lines.cut && !keepCut:
			return bufio.ErrTooLong
		}
		if len(line) == 0 {
			if has {
				if err := fn(id, event, data, cut); err != nil {
					return err
				}
			}
			id, event, data, has, cut = "", "", data[:0], false, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			id = string(value)
		case "event":
			event = string(value)
		case "data":
			sep := 0
			if has {
				sep = 1
			}
			if room := maxLine - len(data) - sep; len(value) > room {
				if !keepCut {
					return bufio.ErrTooLong
				}
				if room <= 0 {
					cut = true
					continue
				}
				value, cut = value[:room], true
			}
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, value...), true
		default:
			continue
		}
		cut = cut || lines.cut
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// lineSplitter splits a stream into lines as sseLines does, with lines
// bounded by max bytes: a longer line is answered as its first max bytes,
// with cut set, and the rest of it is dropped.
type lineSplitter struct {
	max int
	// cut says the last line answered is the start of a longer one.
	cut bool
	// skip is set while the rest of a longer line is dropped.
	skip bool
	// dropped says the last token is the end of a dropped line: no
	// line, answered because a scanner reads on, rather than split
	// what it holds, after a split that answers no token.
	dropped bool
}

func (s *lineSplitter) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	s.cut, s.dropped = false, false
	if s.skip {
		switch {
		case i < 0:
			return len(data), nil, nil
		case data[i] == '\r' && i+1 == len(data) && !atEOF:
			return i, nil, nil // a CR at the end: wait to see whether LF follows
		}
		s.skip, s.dropped = false, true
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			return i + 2, data[:0], nil
		}
		return i + 1, data[:0], nil
	}
	if n := len(data); (i < 0 && n > s.max) || i > s.max {
		s.cut, s.skip = true, true
		return s.max, data[:s.max], nil
	}
	return sseLines(data, atEOF)
}

// sseLines splits a stream into lines ended by CRLF, LF or a lone CR, as
// the SSE standard has it.
func sseLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && atEOF && len(data) > 0:
		return len(data), data, nil
	case i < 0:
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	return 0, nil, nil // a CR at the end: wait to see whether LF follows
}

// ErrNotEventStream reports a followed stream or a host's commands
// connection whose request was answered 200 with something other than an
// event stream (a proxy's or a static server's page): the iteration ends
// with it, and the host stops with it (Connected and Err answer it),
// without a reconnection.
var ErrNotEventStream = errors.New("client: answer is not an event stream")

// checkEventStream answers ErrNotEventStream unless header's content type
// is text/event-stream.
func checkEventStream(header http.Header) error {
	ct := header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && strings.EqualFold(mt, "text/event-stream") {
		return nil
	}
	return fmt.Errorf("%w: content type %q", ErrNotEventStream, clip(ct, 128))
}
