package httpapi

import "strings"

// codePrefixes are the prefixes the server's own packages (and
// encoding/json) put before their error texts: an answer's message is
// read by clients, to whom the package that refused is noise.
var codePrefixes = []string{"session: ", "envapi: ", "journal: ", "idem: ", "hosts: ", "loophost: ", "envbind: ", "catalog: ", "json: "}

// cleanMessage drops the package prefixes from a message built from an
// error of the server's own code, where they start the message or one of
// its ": "-separated parts, outside quoted text (which is the client's):
// "session ses_x: session: not found" reads "session ses_x: not found".
func cleanMessage(msg string) string {
	if !hasCodePrefix(msg) {
		return msg
	}
	var b strings.Builder
	b.Grow(len(msg))
	quoted, escaped := false, false
	for i := 0; i < len(msg); {
		if !quoted && (i == 0 || strings.HasSuffix(msg[:i], ": ")) {
			if p := codePrefix(msg[i:]); p != "" {
				i += len(p)
				continue
			}
		}
		c := msg[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

func hasCodePrefix(msg string) bool {
	for _, p := range codePrefixes {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// codePrefix answers the prefix of codePrefixes s starts with, or "".
func codePrefix(s string) string {
	for _, p := range codePrefixes {
		if strings.HasPrefix(s, p) {
			return p
		}
	}
	return ""
}
