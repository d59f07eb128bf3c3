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

// maxSSELine bounds one line of a server-sent event stream (an event's
// data is one line on Brain's streams).
const maxSSELine = 80 << 20

// scanSSE reads server-sent events from r and hands each to fn: its id,
// its event name and its data, the data lines joined with "\n". A field's
// value loses one leading space; lines end with CRLF, LF or CR; comments and unknown fields are skipped;
// an event without data is not handed on. Unlike a browser's EventSource,
// an id holds for its own event only: Brain marks a journaled event with
// an id and a live frame without one. scanSSE stops at the first error fn
// answers, at a read error, or at the end of r (io.ErrUnexpectedEOF:
// Brain never ends a stream it keeps open).
func scanSSE(r io.Reader, fn func(id, event string, data []byte) error) error {
	return scanSSEMax(r, maxSSELine, fn)
}

// scanSSEMax is scanSSE with lines bounded by maxLine bytes.
func scanSSEMax(r io.Reader, maxLine int, fn func(id, event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, min(64<<10, maxLine)), maxLine)
	sc.Split(sseLines)
	var id, event string
	var data []byte
	has := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if has {
				if err := fn(id, event, data); err != nil {
					return err
				}
			}
			id, event, data, has = "", "", data[:0], false
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
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, value...), true
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
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
