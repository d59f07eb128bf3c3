package tracing

import (
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportable answers spans as they are exported: each status description
// cut to MaxAttributeValue characters, as string attributes are, and
// every string of a span (its name, status, attributes, events' and
// links') that is not UTF-8 with its bad bytes replaced by U+FFFD.
//
// A description is a failure's message, which a model provider, an
// environment or a client chose, and one batch of spans carrying megabytes
// of it would be refused by the collector as a whole. A string that is not
// UTF-8 (a session id a client sent percent-encoded in a request's path)
// cannot be encoded in an OTLP request at all, and would lose every span
// of its batch. spans itself is not changed.
func exportable(spans []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for i, s := range spans {
		n, changed := exportableSpan(s)
		if !changed {
			if out != nil {
				out[i] = s
			}
			continue
		}
		if out == nil {
			out = make([]sdktrace.ReadOnlySpan, len(spans))
			copy(out, spans[:i])
		}
		out[i] = n
	}
	if out == nil {
		return spans
	}
	return out
}

// exportableSpan answers s as exportable says, and whether that changed it.
func exportableSpan(s sdktrace.ReadOnlySpan) (sdktrace.ReadOnlySpan, bool) {
	n := rewritten{ReadOnlySpan: s, name: s.Name(), status: s.Status(), attrs: s.Attributes(),
		events: s.Events(), links: s.Links()}
	changed := false
	if v, ok := validString(n.name); ok {
		n.name, changed = v, true
	}
	if v, ok := cutString(n.status.Description, MaxAttributeValue); ok {
		n.status.Description, changed = v, true
	}
	if v, ok := validString(n.status.Description); ok {
		n.status.Description, changed = v, true
	}
	if v, ok := validAttrs(n.attrs); ok {
		n.attrs, changed = v, true
	}
	var events []sdktrace.Event
	for i, e := range n.events {
		name, nameChanged := validString(e.Name)
		attrs, attrsChanged := validAttrs(e.Attributes)
		if !nameChanged && !attrsChanged {
			continue
		}
		if events == nil {
			events = append([]sdktrace.Event(nil), n.events...)
		}
		events[i].Name, events[i].Attributes = name, attrs
	}
	if events != nil {
		n.events, changed = events, true
	}
	var links []sdktrace.Link
	for i, l := range n.links {
		attrs, ok := validAttrs(l.Attributes)
		if !ok {
			continue
		}
		if links == nil {
			links = append([]sdktrace.Link(nil), n.links...)
		}
		links[i].Attributes = attrs
	}
	if links != nil {
		n.links, changed = links, true
	}
	if !changed {
		return s, false
	}
	return n, true
}

// cutString answers the first limit characters of s, cut between
// characters (a byte that is not UTF-8 counted as one), and whether s was
// longer.
func cutString(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// validString answers s with the bytes that are not UTF-8 replaced by
// U+FFFD, and whether there were any.
func validString(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, false
	}
	return strings.ToValidUTF8(s, "\uFFFD"), true
}

// validAttrs answers attrs with validValue applied to each value, and
// whether that changed any (attrs itself is not changed).
func validAttrs(attrs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	var out []attribute.KeyValue
	for i, kv := range attrs {
		key, keyChanged := validString(string(kv.Key))
		v, valueChanged := validValue(kv.Value, 0)
		if !keyChanged && !valueChanged {
			continue
		}
		if out == nil {
			out = append([]attribute.KeyValue(nil), attrs...)
		}
		out[i] = attribute.KeyValue{Key: attribute.Key(key), Value: v}
	}
	if out == nil {
		return attrs, false
	}
	return out, true
}

// validValue answers v with every string in it made valid UTF-8, and
// whether that changed it.
func validValue(v attribute.Value, depth int) (attribute.Value, bool) {
	switch v.Type() {
	case attribute.STRING:
		if s, ok := validString(v.AsString()); ok {
			return attribute.StringValue(s), true
		}
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice()
		changed := false
		for i, s := range ss {
			if s, ok := validString(s); ok {
				ss[i], changed = s, true
			}
		}
		if changed {
			return attribute.StringSliceValue(ss), true
		}
	case attribute.SLICE:
		if depth >= maxDepth {
			break
		}
		vs := v.AsSlice()
		changed := false
		for i, x := range vs {
			if x, ok := validValue(x, depth+1); ok {
				vs[i], changed = x, true
			}
		}
		if changed {
			return attribute.SliceValue(vs...), true
		}
	case attribute.MAP:
		if depth >= maxDepth {
			break
		}
		if kvs, ok := validAttrsAt(v.AsMap(), depth+1); ok {
			return attribute.MapValue(kvs...), true
		}
	}
	return v, false
}

// validAttrsAt is validAttrs for the values of a map at depth.
func validAttrsAt(attrs []attribute.KeyValue, depth int) ([]attribute.KeyValue, bool) {
	changed := false
	for i, kv := range attrs {
		key, keyChanged := validString(string(kv.Key))
		v, valueChanged := validValue(kv.Value, depth)
		if keyChanged || valueChanged {
			attrs[i], changed = attribute.KeyValue{Key: attribute.Key(key), Value: v}, true
		}
	}
	return attrs, changed
}

// rewritten is a span exported with other strings than it holds.
type rewritten struct {
	sdktrace.ReadOnlySpan
	name   string
	status sdktrace.Status
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	links  []sdktrace.Link
}

func (r rewritten) Name() string                     { return r.name }
func (r rewritten) Status() sdktrace.Status          { return r.status }
func (r rewritten) Attributes() []attribute.KeyValue { return r.attrs }
func (r rewritten) Events() []sdktrace.Event         { return r.events }
func (r rewritten) Links() []sdktrace.Link           { return r.links }
