package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Schema is a compiled JSON Schema of the subset Brain enforces on tool
// inputs, successful tool outputs, method inputs and template
// configurations:
//
//   - type: one name or an array of names among object, array, string,
//     number, integer, boolean, null (integer accepts any number without a
//     fractional part);
//   - properties, required and additionalProperties (false, true or a
//     schema) for objects;
//   - items (one schema for every element), minItems and maxItems for
//     arrays;
//   - enum and const (compared as canonical JSON);
//   - minimum, maximum, exclusiveMinimum and exclusiveMaximum (numbers);
//   - minLength and maxLength (counted in Unicode code points);
//   - the boolean schemas true and false.
//
// Every other keyword (description, title, format, $schema, ...) is
// ignored, so a richer schema is checked only as far as this subset goes;
// it never rejects a value the full schema would accept except through
// the keywords above. An absent or empty schema accepts every value.
type Schema struct {
	never      bool
	types      []string
	properties map[string]*Schema
	required   []string
	addl       *Schema // nil: any additional property
	addlFalse  bool
	items      *Schema
	enum       []string // canonical JSON
	min, max   *float64
	xmin, xmax *float64
	minLen     *int
	maxLen     *int
	minItems   *int
	maxItems   *int
}

// CompileSchema compiles raw; absent or null raw compiles to a schema that
// accepts everything.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &Schema{}, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	return compile(v, "")
}

func compile(v any, path string) (*Schema, error) {
	bad := func(format string, a ...any) (*Schema, error) {
		return nil, fmt.Errorf("schema%s: "+format, append([]any{path}, a...)...)
	}
	switch t := v.(type) {
	case bool:
		return &Schema{never: !t}, nil
	case map[string]any:
		s := &Schema{}
		for key, val := range t {
			switch key {
			case "type":
				switch tv := val.(type) {
				case string:
					s.types = []string{tv}
				case []any:
					for _, x := range tv {
						name, ok := x.(string)
						if !ok {
							return bad(".type must name types")
						}
						s.types = append(s.types, name)
					}
				default:
					return bad(".type must be a string or an array")
				}
				for _, name := range s.types {
					switch name {
					case "object", "array", "string", "number", "integer", "boolean", "null":
					default:
						return bad(".type %q is not a JSON Schema type", name)
					}
				}
			case "properties":
				m, ok := val.(map[string]any)
				if !ok {
					return bad(".properties must be an object")
				}
				s.properties = map[string]*Schema{}
				for name, sub := range m {
					c, err := compile(sub, path+".properties."+name)
					if err != nil {
						return nil, err
					}
					s.properties[name] = c
				}
			case "required":
				list, ok := val.([]any)
				if !ok {
					return bad(".required must be an array")
				}
				for _, x := range list {
					name, ok := x.(string)
					if !ok {
						return bad(".required must list property names")
					}
					s.required = append(s.required, name)
				}
			case "additionalProperties":
				if b, ok := val.(bool); ok {
					s.addlFalse = !b
					continue
				}
				c, err := compile(val, path+".additionalProperties")
				if err != nil {
					return nil, err
				}
				s.addl = c
			case "items":
				c, err := compile(val, path+".items")
				if err != nil {
					return nil, err
				}
				s.items = c
			case "enum":
				list, ok := val.([]any)
				if !ok {
					return bad(".enum must be an array")
				}
				for _, x := range list {
					s.enum = append(s.enum, canonical(x))
				}
			case "const":
				s.enum = []string{canonical(val)}
			case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
				n, ok := number(val)
				if !ok {
					return bad(".%s must be a number", key)
				}
				switch key {
				case "minimum":
					s.min = &n
				case "maximum":
					s.max = &n
				case "exclusiveMinimum":
					s.xmin = &n
				default:
					s.xmax = &n
				}
			case "minLength", "maxLength", "minItems", "maxItems":
				n, ok := number(val)
				if !ok || n < 0 || n != math.Trunc(n) {
					return bad(".%s must be a non-negative integer", key)
				}
				i := int(n)
				switch key {
				case "minLength":
					s.minLen = &i
				case "maxLength":
					s.maxLen = &i
				case "minItems":
					s.minItems = &i
				default:
					s.maxItems = &i
				}
			}
		}
		return s, nil
	}
	return bad(" must be an object or a boolean")
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// canonical renders a decoded value as JSON with sorted keys and numbers
// normalised, so that enum comparison ignores formatting.
func canonical(v any) string {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				write(t[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, x := range t {
				if i > 0 {
					b.WriteByte(',')
				}
				write(x)
			}
			b.WriteByte(']')
		case json.Number:
			f, err := t.Float64()
			if err != nil {
				b.WriteString(t.String())
				return
			}
			fb, _ := json.Marshal(f)
			b.Write(fb)
		default:
			x, _ := json.Marshal(t)
			b.Write(x)
		}
	}
	write(v)
	return b.String()
}

// Validate checks a JSON document against the schema and answers the
// first violation, naming its location ("$.path.to[2]").
func (s *Schema) Validate(doc json.RawMessage) error {
	if s == nil {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("$: not JSON: %w", err)
	}
	return s.check(v, "$")
}

func typeOf(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if f, err := t.Float64(); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

func (s *Schema) check(v any, at string) error {
	if s.never {
		return fmt.Errorf("%s: no value is allowed here", at)
	}
	if len(s.types) > 0 {
		got := typeOf(v)
		ok := false
		for _, want := range s.types {
			if want == got || (want == "number" && got == "integer") {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("%s: %s is not of type %s", at, got, strings.Join(s.types, " or "))
		}
	}
	if len(s.enum) > 0 {
		c, found := canonical(v), false
		for _, e := range s.enum {
			if e == c {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: value is not one of the allowed values", at)
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for _, name := range s.required {
			if _, ok := t[name]; !ok {
				return fmt.Errorf("%s: property %q is required", at, name)
			}
		}
		names := make([]string, 0, len(t))
		for k := range t {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			sub, declared := s.properties[k]
			switch {
			case declared:
			case s.addlFalse:
				return fmt.Errorf("%s: property %q is not allowed", at, k)
			case s.addl != nil:
				sub = s.addl
			default:
				continue
			}
			if err := sub.check(t[k], at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if s.minItems != nil && len(t) < *s.minItems {
			return fmt.Errorf("%s: fewer than %d items", at, *s.minItems)
		}
		if s.maxItems != nil && len(t) > *s.maxItems {
			return fmt.Errorf("%s: more than %d items", at, *s.maxItems)
		}
		if s.items != nil {
			for i, x := range t {
				if err := s.items.check(x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case string:
		n := utf8.RuneCountInString(t)
		if s.minLen != nil && n < *s.minLen {
			return fmt.Errorf("%s: shorter than %d characters", at, *s.minLen)
		}
		if s.maxLen != nil && n > *s.maxLen {
			return fmt.Errorf("%s: longer than %d characters", at, *s.maxLen)
		}
	case json.Number:
		f, _ := t.Float64()
		switch {
		case s.min != nil && f < *s.min:
			return fmt.Errorf("%s: %s is below the minimum %v", at, t, *s.min)
		case s.max != nil && f > *s.max:
			return fmt.Errorf("%s: %s is above the maximum %v", at, t, *s.max)
		case s.xmin != nil && f <= *s.xmin:
			return fmt.Errorf("%s: %s is not above %v", at, t, *s.xmin)
		case s.xmax != nil && f >= *s.xmax:
			return fmt.Errorf("%s: %s is not below %v", at, t, *s.xmax)
		}
	}
	return nil
}

// schemaCache keeps compiled schemas by their text; sessions of one
// deployment usually share a handful of tool schemas.
type schemaCache struct {
	m sync.Map // string -> *Schema or error
	n atomic.Int64
}

// maxCachedSchemas bounds the cache; past it schemas are compiled per use.
const maxCachedSchemas = 4096

func (c *schemaCache) get(raw json.RawMessage) (*Schema, error) {
	key := string(raw)
	if v, ok := c.m.Load(key); ok {
		if err, bad := v.(error); bad {
			return nil, err
		}
		return v.(*Schema), nil
	}
	s, err := CompileSchema(raw)
	if c.n.Add(1) <= maxCachedSchemas {
		if err != nil {
			c.m.Store(key, err)
		} else {
			c.m.Store(key, s)
		}
	}
	return s, err
}
