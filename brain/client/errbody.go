package client

import (
	"bytes"
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

// readError reads an error answer's body, at most maxErrorBytes of it,
// without the credentials secrets (the bearer token the request carried,
// and those its body carried): an answer that quotes the request's
// Authorization header or its body, as a debugging proxy's page may, does
// not put them into an error.
func readError(body io.Reader, secrets ...string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxErrorBytes))
	return redact(b, secrets...), err
}

// redactedMark stands in an error answer for a credential removed from it.
const redactedMark = "[redacted]"

// minRedacted is the length of the shortest credential removed from error
// answers: a shorter string would rewrite ordinary words of the answer.
const minRedacted = 8

// redact answers b with every occurrence of each of secrets replaced by
// redactedMark.
func redact(b []byte, secrets ...string) []byte {
	for _, secret := range secrets {
		if len(secret) < minRedacted || !bytes.Contains(b, []byte(secret)) {
			continue
		}
		b = bytes.ReplaceAll(b, []byte(secret), []byte(redactedMark))
	}
	return b
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
