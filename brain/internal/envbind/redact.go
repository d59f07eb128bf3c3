package envbind

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// redacted replaces a secret found in what a provider answered.
const redacted = "[redacted]"

// redactor removes secrets an operation carried (the credential, the
// invocation, context and reporter tokens) from the provider's answer and
// from delivery errors, which are journaled, logged and answered.
type redactor []string

// string answers s with every secret removed, as its bytes or as Go
// quotes it (strconv.Quote, %q: errors quote what a provider sent). The
// longest secrets go first: a secret that holds a shorter one is removed
// whole, not left with the shorter one cut out of it.
func (r redactor) string(s string) string {
	if padded := r.forms(); len(padded) != len(r) {
		r = padded // a copy
	} else if len(r) > 1 {
		r = slices.Clone(r)
	}
	if len(r) > 1 {
		slices.SortStableFunc(r, func(a, b string) int { return len(b) - len(a) })
	}
	for _, v := range r {
		if v != "" {
			s = strings.ReplaceAll(s, v, redacted)
			if q := quoted(v); q != v {
				s = strings.ReplaceAll(s, q, redacted)
			}
		}
	}
	return s
}

// with answers r followed by the secrets of more it does not hold; r's
// array is never written.
func (r redactor) with(more redactor) redactor {
	out := slices.Clip(r)
	for _, v := range more {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// forms answers r with, for each secret that has spaces or tabs around
// it, that secret without them besides: HTTP carries no white space
// around a header's value, so a credential pasted with some reaches the
// provider, which may quote it, without. r itself is answered when no
// secret has any.
func (r redactor) forms() redactor {
	var out redactor
	for _, v := range r {
		if t := strings.Trim(v, " \t"); t != v && t != "" {
			if out == nil {
				out = slices.Clone(r)
			}
			out = append(out, t)
		}
	}
	if out == nil {
		return r
	}
	return out
}

func (r redactor) contains(s string) bool {
	for _, v := range r.forms() {
		if v == "" {
			continue
		}
		if strings.Contains(s, v) {
			return true
		}
		if q := quoted(v); q != v && strings.Contains(s, q) {
			return true
		}
	}
	return false
}

// quoted answers v as it reads between the quotes of strconv.Quote(v).
func quoted(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q := strconv.Quote(v)
			return q[1 : len(q)-1]
		}
	}
	return v
}

// json answers raw with the secrets removed from its strings (keys and
// values); raw is returned unchanged when it holds none. Any character
// may be written as a \u escape (some encoders so write "=" or "'"), so
// raw that has one is decoded whatever the secrets.
func (r redactor) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !r.mayQuote(raw) && !(r.holdsSecret() && bytes.Contains(raw, []byte(`\u`))) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	v, changed := r.value(v)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return out
}

// holdsSecret reports whether r holds a secret.
func (r redactor) holdsSecret() bool {
	return slices.ContainsFunc(r, func(v string) bool { return v != "" })
}

// mayQuote reports whether raw may hold a secret: as its bytes, or, when
// raw has escapes, written with escapes (a secret of characters a JSON
// encoder may escape). Answers without secrets, nearly all, are then not
// decoded.
func (r redactor) mayQuote(raw []byte) bool {
	escapes := bytes.IndexByte(raw, '\\') >= 0
	for _, v := range r.forms() {
		if v == "" {
			continue
		}
		if bytes.Contains(raw, []byte(v)) || escapes && !plain(v) {
			return true
		}
	}
	return false
}

// plain reports whether s holds none of the characters JSON encoders
// usually escape: it is printable ASCII other than the quote, the
// backslash, the slash and the characters Go escapes for HTML.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte(`"\/<>&`, c) >= 0 {
			return false
		}
	}
	return true
}

func (r redactor) value(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if r.contains(x) {
			return r.string(x), true
		}
	case json.Number:
		// A secret of digits (a numeric key) may be quoted as a number,
		// or inside one: the number becomes the string that says so.
		if r.contains(string(x)) {
			return r.string(string(x)), true
		}
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			if x[i], c = r.value(e); c {
				changed = true
			}
		}
		return x, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(x))
		for k, e := range x {
			e, c := r.value(e)
			if r.contains(k) {
				k, c = r.string(k), true
			}
			changed = changed || c
			out[k] = e
		}
		return out, changed
	}
	return v, false
}

func (r redactor) receipt(rc envapi.Receipt) envapi.Receipt {
	rc.Message = r.string(rc.Message)
	rc.Details = r.json(rc.Details)
	rc.Data = r.json(rc.Data)
	rc.Output = r.json(rc.Output)
	return rc
}

// redactedError is a delivery error whose message had secrets removed;
// it still matches what it wraps (errors.Is).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (r redactor) error(err error) error {
	if err == nil || !r.contains(err.Error()) {
		return err
	}
	return &redactedError{msg: r.string(err.Error()), err: err}
}

// RedactJSON answers raw with every secret removed from its strings (keys
// and values), as what a provider answers is journaled: a provider that
// writes the token of its grant or reporter into what it sends Brain (an
// event's data, a result, a stored value) does not put it in the journal.
// raw is returned unchanged when it holds none.
func RedactJSON(raw json.RawMessage, secrets ...string) json.RawMessage {
	return redactor(secrets).json(raw)
}

// RedactString answers s with every secret removed, as its bytes or as Go
// quotes it, the way a delivery error is redacted: the Wasm host so
// removes the secrets a Tool was granted from what it records of the
// Tool's answer and output.
func RedactString(s string, secrets ...string) string {
	r := redactor(secrets)
	if !r.contains(s) {
		return s
	}
	return r.string(s)
}

// Redacted is what replaces a secret.
const Redacted = redacted
