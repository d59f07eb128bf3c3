package client

import (
	"io"
	"strings"
)

// maxErrorBytes bounds the part of an error answer the client reads: an
// ApiError's message holds at most 4096 bytes and its details (an
// environment's or a tool's) no more than one journal record (64 MiB);
// a longer body (a proxy's page, or one that never ends) is cut there.
const maxErrorBytes = 64 << 20

// maxQuotedBytes bounds the part of an error answer that is not an
// ApiError quoted in the error's message.
const maxQuotedBytes = 512

// readError reads an error answer's body, at most maxErrorBytes of it.
func readError(body io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(body, maxErrorBytes))
}

// quote answers the text of an error answer that is not an ApiError,
// shortened to maxQuotedBytes.
func quote(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) <= maxQuotedBytes {
		return s
	}
	return clip(s, maxQuotedBytes) + " [cut]"
}
