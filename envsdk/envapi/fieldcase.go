package envapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// MisnamedField reports the first object member of the JSON text data
// whose name differs only in case from a field of the Go value v decodes
// into (a struct field that has no member of exactly that name), with the
// dotted path of its object ("" for the top level). encoding/json matches
// member names to fields without regard to case, so {"Model": …} would
// fill a field named "model", and of {"model": …, "Model": …} keep the
// last; a reader that compares names exactly (a JSON Schema with
// additionalProperties: false, other languages) sees an unknown member
// instead. The strict decoders refuse such a member as unknown.
//
// Values decoded by their own UnmarshalJSON (json.RawMessage, the
// protocol's unions) and free-form values (any, maps' keys) are not
// looked into: they check their own names or have none to check.
// Malformed JSON answers false: the decoder reports it.
func MisnamedField(data []byte, v any) (path, key string, found bool) {
	t := reflect.TypeOf(v)
	if t == nil || !json.Valid(data) {
		return "", "", false
	}
	w := caseWalker{d: json.NewDecoder(bytes.NewReader(data))}
	w.value(t, "")
	return w.path, w.key, w.found
}

type caseWalker struct {
	d         *json.Decoder
	found     bool
	path, key string
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// value walks the next JSON value as a value of type t.
func (w *caseWalker) value(t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer && !t.Implements(unmarshalerType) {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		w.skip()
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.object(path, func(name string) (reflect.Type, bool) {
			f := structFields(t)
			if ft, ok := f.exact[name]; ok {
				return ft, true
			}
			for n := range f.exact {
				if strings.EqualFold(n, name) {
					w.found, w.path, w.key = true, path, name
					return nil, false
				}
			}
			return nil, true // unknown: the decoder refuses it
		})
	case reflect.Map:
		elem := t.Elem()
		w.object(path, func(name string) (reflect.Type, bool) { return elem, true })
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			w.skip() // base64 text
			return
		}
		w.array(t.Elem(), path)
	default:
		w.skip()
	}
}

// object walks an object (or null); member answers the type of a
// member's value (nil: skip it) and false to stop.
func (w *caseWalker) object(path string, member func(name string) (reflect.Type, bool)) {
	tok, err := w.d.Token()
	if err != nil || tok != json.Delim('{') {
		return
	}
	for w.d.More() {
		tok, err := w.d.Token()
		if err != nil {
			w.stop()
			return
		}
		name, _ := tok.(string)
		t, ok := member(name)
		if !ok {
			return
		}
		if t == nil {
			w.skip()
		} else {
			w.value(t, join(path, name))
		}
		if w.found {
			return
		}
	}
	_, _ = w.d.Token()
}

// array walks an array (or null) of elem values.
func (w *caseWalker) array(elem reflect.Type, path string) {
	tok, err := w.d.Token()
	if err != nil || tok != json.Delim('[') {
		return
	}
	for w.d.More() && !w.found {
		w.value(elem, path)
	}
	_, _ = w.d.Token()
}

// skip passes over the next value.
func (w *caseWalker) skip() {
	var raw json.RawMessage
	if w.d.Decode(&raw) != nil {
		w.stop()
	}
}

// stop ends the walk without a finding (the text is not what the type
// decodes: the decoder reports it).
func (w *caseWalker) stop() { w.d = json.NewDecoder(bytes.NewReader(nil)) }

// fieldSet is the member names of a struct type that encoding/json
// decodes, with the types of their fields.
type fieldSet struct {
	exact map[string]reflect.Type
}

var fieldSets sync.Map // reflect.Type → *fieldSet

func structFields(t reflect.Type) *fieldSet {
	if f, ok := fieldSets.Load(t); ok {
		return f.(*fieldSet)
	}
	f := &fieldSet{exact: map[string]reflect.Type{}}
	addFields(f, t, 0)
	fieldSets.Store(t, f)
	return f
}

// addFields adds t's fields, and those of untagged embedded structs, the
// shallower field winning a name.
func addFields(f *fieldSet, t reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	var embedded []reflect.Type
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, ok := f.exact[name]; !ok {
			f.exact[name] = sf.Type
		}
	}
	for _, et := range embedded {
		addFields(f, et, depth+1)
	}
}
