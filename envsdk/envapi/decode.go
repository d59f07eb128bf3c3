package envapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
)

// FieldError is a decoding error that names the offending field by its JSON
// path ("operation.sequence"); an empty Field means the document itself.
type FieldError struct {
	Field  string
	Reason string
	// Unsupported is set when the document is well formed but names a
	// request, receipt or method type this version does not know.
	Unsupported bool
}

// Error names the field and the reason.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "envapi: " + clip(e.Reason)
	}
	return "envapi: " + clip(e.Field) + ": " + clip(e.Reason)
}

// maxErrorPart bounds the field path and the reason an error message
// prints: both may quote the document (a key, a value), which is the
// sender's, and the message may be answered, logged or journaled.
const maxErrorPart = 256

// clip cuts s to maxErrorPart bytes on a rune boundary, saying how long it
// was.
func clip(s string) string {
	if len(s) <= maxErrorPart {
		return s
	}
	return cutRunes(s, maxErrorPart) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// ErrUnsupported matches a *FieldError with Unsupported set.
var ErrUnsupported = errors.New("envapi: unsupported type")

// Is lets errors.Is(err, ErrUnsupported) recognise unknown types.
func (e *FieldError) Is(target error) bool { return target == ErrUnsupported && e.Unsupported }

var (
	validateOnce sync.Once
	validate     *validator.Validate
)

func validatorInstance() *validator.Validate {
	validateOnce.Do(func() {
		v := validator.New(validator.WithRequiredStructEnabled())
		v.RegisterTagNameFunc(func(f reflect.StructField) string {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				return ""
			}
			if name == "" {
				return f.Name
			}
			return name
		})
		if err := v.RegisterValidation("identifier", func(fl validator.FieldLevel) bool {
			return ValidIdentifier(fl.Field().String())
		}); err != nil {
			panic(err)
		}
		validate = v
	})
	return validate
}

// Validate checks v's struct rules (validator tags) and answers a
// *FieldError whose Field is prefixed with path.
func Validate(v any, path string) error { return validateStruct(v, path) }

// validateStruct checks the validator tags of the struct v holds (through
// pointers), or of the structs a slice, array or map of them holds; any
// other value (a map of plain values, json.RawMessage, a nil pointer) has
// no tags to check.
func validateStruct(v any, path string) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Struct:
		if rv.CanAddr() {
			return validateOne(rv.Addr().Interface(), path)
		}
		return validateOne(rv.Interface(), path)
	case reflect.Slice, reflect.Array:
		if !holdsStructs(rv.Type()) {
			return nil
		}
		for i := range rv.Len() {
			if err := validateStruct(rv.Index(i).Interface(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if !holdsStructs(rv.Type()) {
			return nil
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if err := validateStruct(rv.MapIndex(k).Interface(), path+"["+fmt.Sprint(k)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdsStructs reports whether the elements of the slice, array or map
// type t are structs (or pointers to them).
func holdsStructs(t reflect.Type) bool {
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct
}

// validateOne checks the validator tags of the struct v.
func validateOne(v any, path string) error {
	err := validatorInstance().Struct(v)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) || len(verrs) == 0 {
		return &FieldError{Field: path, Reason: err.Error()}
	}
	fe := verrs[0]
	// Namespace is "Type.field.sub"; drop the root type name.
	ns := fe.Namespace()
	if i := strings.IndexByte(ns, '.'); i >= 0 {
		ns = ns[i+1:]
	}
	return &FieldError{Field: join(path, ns), Reason: describe(fe)}
}

func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "identifier":
		return fmt.Sprintf("%q is not an identifier (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$)", fmt.Sprint(fe.Value()))
	case "required":
		return "is required"
	case "min":
		if fe.Kind() == reflect.String || fe.Kind() == reflect.Slice {
			return "must have at least " + fe.Param() + " elements"
		}
		return "must be at least " + fe.Param() + ", got " + fmt.Sprint(fe.Value())
	case "max":
		return "must be at most " + fe.Param() + " long"
	case "oneof":
		return "must be one of: " + fe.Param()
	case "http_url", "url":
		return "must be an absolute http(s) URL"
	default:
		return "fails rule " + strconv.Quote(fe.Tag())
	}
}

// strict decodes data into v rejecting unknown fields, trailing data and
// wrong types, then validates v's struct rules. Errors name fields below path.
func strict(data []byte, v any, path string) error { return strictDecode(data, v, path, true) }

// strictNoDup is strict without the duplicate key check, for a part of a
// document strict checked as a whole.
func strictNoDup(data []byte, v any, path string) error { return strictDecode(data, v, path, false) }

func strictDecode(data []byte, v any, path string, dupCheck bool) error {
	if dupCheck && !utf8.Valid(data) {
		// encoding/json would keep the bytes in raw values as they are and
		// replace them in strings: JSON between systems is UTF-8 (RFC 8259).
		return &FieldError{Field: path, Reason: "malformed JSON: not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fieldErr(path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &FieldError{Field: path, Reason: "unexpected data after the JSON value"}
	}
	at, key, dup, misnamed := StrictMembers(data, v)
	if dup && dupCheck {
		return &FieldError{Field: join(path, at), Reason: "duplicate key " + strconv.Quote(key)}
	}
	if misnamed {
		return &FieldError{Field: join(path, join(at, key)), Reason: "unknown field (names are case-sensitive)"}
	}
	return validateStruct(v, path)
}

// Strict decodes data into v like the protocol decoders do: unknown fields,
// wrong types and validator rule violations are *FieldError values. v is a
// pointer to any type encoding/json decodes into; the validator tags
// checked are those of the struct it holds, or of the structs a slice,
// array or map of them holds.
func Strict(data []byte, v any) error { return strict(data, v, "") }

func fieldErr(path string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &syn):
		return &FieldError{Field: path, Reason: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		return &FieldError{Field: join(path, typ.Field), Reason: "wrong type: got JSON " + typ.Value + ", want " + JSONKind(typ.Type)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Field: path, Reason: "malformed JSON: unexpected end of input"}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		return &FieldError{Field: join(path, strings.TrimSuffix(name, `"`)), Reason: "unknown field"}
	}
	return &FieldError{Field: path, Reason: strings.TrimPrefix(msg, "json: ")}
}

// JSONKind names the JSON type a value decoded into t must have
// ("string", "integer", "object"...), as a protocol names it rather than
// by the Go type; "value" when t is nil.
func JSONKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return JSONKind(t.Elem())
	}
	return t.String()
}

func join(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

func quote(s string) string { return strconv.Quote(s) }

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// decodeOptional decodes an optional nested object; absent or null gives nil.
func decodeOptional[T any](raw json.RawMessage, path string) (*T, error) {
	if isAbsent(raw) {
		return nil, nil
	}
	v := new(T)
	if err := strict(raw, v, path); err != nil {
		return nil, err
	}
	return v, nil
}
