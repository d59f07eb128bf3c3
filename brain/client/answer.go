package client

import (
	"errors"
	"fmt"
	"io"
)

// maxAnswerBytes is the default bound of a successful answer's body
// (Options.MaxAnswerBytes): four journal records, well above an events
// page (one record at most when it holds a single large event) and any
// write's answer (one record), and a transcript or a session list of
// that size is a rare one.
const maxAnswerBytes = 256 << 20

// ErrAnswerTooLarge reports a successful answer whose body is longer than
// the client reads (Options.MaxAnswerBytes): the call fails with it, and
// is not sent again (the server answered it).
var ErrAnswerTooLarge = errors.New("client: answer too large")

// readAnswer reads a successful answer's body of announced length size
// (-1: unknown), at most max bytes of it.
func readAnswer(body io.Reader, size, max int64) ([]byte, error) {
	if size > max {
		return nil, fmt.Errorf("%w: %d bytes announced, the client reads at most %d", ErrAnswerTooLarge, size, max)
	}
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrAnswerTooLarge, max)
	}
	return b, nil
}
