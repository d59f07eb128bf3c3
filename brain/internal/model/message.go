package model

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxMessageBytes bounds a failure message that Brain records or answers
// in another party's words: a model provider's error message, and the
// engine's record of every such failure.
const MaxMessageBytes = 4096

// CutMessage answers the bounded form of a message of size bytes that
// begins with head: the message itself (head, then all of it) when it
// holds at most MaxMessageBytes; otherwise its start, cut between
// characters, followed by " [message cut: N bytes in all]",
// MaxMessageBytes bytes at most in all. head holds the whole message, or
// at least its first MaxMessageBytes bytes.
func CutMessage(head string, size int) string {
	if size <= MaxMessageBytes {
		return head
	}
	marker := " [message cut: " + strconv.Itoa(size) + " bytes in all]"
	cut := min(MaxMessageBytes-len(marker), len(head))
	for cut > 0 && cut < len(head) && !utf8.RuneStart(head[cut]) {
		cut--
	}
	return head[:cut] + marker
}

// failure is the error of a failure the provider reported, in its own
// code and message: both are cleared of the API key (see redact), the
// code is shortened (see shown) and the message bounded (see
// boundedFailure) as it is read: no redacted copy of the whole message is
// made, and no more of it than the bound is kept.
func (t transport) failure(code, msg string, retryable bool) *ProviderError {
	head, size := t.redactHead(msg, MaxMessageBytes)
	return boundedFailure(t.code(code), head, size, retryable)
}

// code is a provider's error code as an error carries it: cleared of the
// API key and shortened (see shown), as no code is longer than maxShown.
func (t transport) code(code string) string {
	c, n := t.redactHead(code, maxShown+1)
	if n > maxShown {
		c = shown(c)
	}
	return c
}

// boundedFailure is the error of code whose message holds size bytes and
// begins with head (all of it, or at least MaxMessageBytes bytes of it).
// A message longer than MaxMessageBytes is kept as CutMessage makes it,
// and so is the text of the error (see ProviderError.Error): the start of
// it, and how long it was, are all that is kept.
func boundedFailure(code, head string, size int, retryable bool) *ProviderError {
	pe := &ProviderError{Code: code, Message: head, Retryable: retryable}
	if size > MaxMessageBytes {
		pe.head = strings.Clone(head[:min(len(head), MaxMessageBytes)])
		pe.size = size
		pe.Message = CutMessage(pe.head, size)
	}
	return pe
}

// redactHead answers the start of what redact makes of s, keep bytes of
// it at least (all of it when it is shorter), and the length of the whole
// of it, which is not built.
func (t transport) redactHead(s string, keep int) (head string, size int) {
	if t.key == "" {
		return strings.Clone(s[:min(len(s), keep)]), len(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		n, w := 1, s[i:i+1]
		if end, _ := echoAt(s, t.key, i); end > i {
			n, w = end-i, redacted
		}
		size += len(w)
		if b.Len() < keep {
			b.WriteString(w)
		}
		i += n
	}
	return b.String(), size
}
