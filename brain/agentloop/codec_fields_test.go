package agentloop

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// The tests in this file fill every exported member of every type the
// codec handles, recursively, with distinct non-zero values, and compare
// the codec with encoding/json both ways. A member added to one of these
// types that the codec does not know makes them fail: encoding/json
// writes it and the codec does not, or encoding/json reads it and the
// codec leaves it zero.

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// filler fills values with distinct non-zero values.
type filler struct {
	n int
}

// next answers a new number, distinct from every earlier one.
func (f *filler) next() int {
	f.n++
	return f.n
}

// fill sets every exported member reachable from v (a settable value) to
// a non-zero value; path names v in failures.
func (f *filler) fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if v.Type() == rawMessageType {
		n := f.next()
		v.SetBytes(fmt.Appendf(nil, " {\"n\" : %d, \"s\": \"<%d&>\\u2028\", \"a\": [true, null, %d.5]} ", n, n, n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		n := f.next()
		v.SetString(fmt.Sprintf("%s-%d <&> é \u2028 😀 \"q\"", path, n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-int64(f.next()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.125)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			n := f.next()
			v.SetBytes(fmt.Appendf(nil, "bytes-%d-\x00\xff", n))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			t.Fatalf("%s: map key %s: teach the filler", path, v.Type().Key())
		}
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(fmt.Sprintf("key-%d-%d", i, f.next()))
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(t, e, fmt.Sprintf("%s[%s]", path, k))
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		ty := v.Type()
		for i := range ty.NumField() {
			sf := ty.Field(i)
			if !sf.IsExported() || sf.Tag.Get("json") == "-" {
				continue
			}
			f.fill(t, v.Field(i), path+"."+sf.Name)
		}
	default:
		t.Fatalf("%s: kind %s: teach the filler", path, v.Kind())
	}
}

// filled answers a T with every member set.
func filled[T any](t *testing.T) T {
	t.Helper()
	var v T
	f := filler{}
	f.fill(t, reflect.ValueOf(&v).Elem(), reflect.TypeFor[T]().String())
	return v
}

// checkEncodeAll compares the codec's encoding of a filled T and of the
// zero T with json.Marshal.
func checkEncodeAll[T any](t *testing.T, enc func(e *encoder, v *T)) {
	t.Helper()
	name := reflect.TypeFor[T]().String()
	for _, v := range []T{filled[T](t), *new(T)} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := encodeWith(func(e *encoder) { enc(e, &v) })
		if err != nil {
			t.Fatalf("%s: codec: %v", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: the codec does not write what encoding/json writes:\n got %s\nwant %s", name, got, want)
		}
	}
}

// checkDecodeAll decodes json.Marshal of a filled T and of the zero T
// with the codec and with encoding/json and compares the values.
func checkDecodeAll[T any](t *testing.T, dec func(d *decoder, v *T)) {
	t.Helper()
	name := reflect.TypeFor[T]().String()
	for _, v := range []T{filled[T](t), *new(T)} {
		doc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want, got T
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := decodeWith(doc, func(d *decoder) { dec(d, &got) }); err != nil {
			t.Fatalf("%s: codec: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the codec does not read what encoding/json reads from %s:\n got %#v\nwant %#v", name, doc, got, want)
		}
	}
}

func TestCodecEncodesEveryMember(t *testing.T) {
	checkEncodeAll(t, func(e *encoder, v *api.Media) { e.media(*v) })
	checkEncodeAll(t, func(e *encoder, v *api.ContentBlock) { e.block(v) })
	checkEncodeAll(t, func(e *encoder, v *api.Message) { e.message(v) })
	checkEncodeAll(t, func(e *encoder, v *[]api.Message) { e.messages(*v) })
	checkEncodeAll(t, func(e *encoder, v *api.ModelRequest) { e.modelRequest(v) })
	checkEncodeAll(t, func(e *encoder, v *[]api.ToolInvocation) { e.invocations(*v) })
	checkEncodeAll(t, func(e *encoder, v *api.EmitInput) { e.keyRaw("event_type", v.EventType, "data", v.Data) })
	checkEncodeAll(t, func(e *encoder, v *api.KVPutInput) { e.keyRaw("key", v.Key, "value", v.Value) })
	checkEncodeAll(t, func(e *encoder, v *api.TurnOutput) { e.turnOutput(v) })
	checkEncodeAll(t, func(e *encoder, v *api.Outcome) { e.Outcome(v) })
	checkEncodeAll(t, func(e *encoder, v *[]json.RawMessage) { e.RawArray(*v) })
	checkEncodeAll(t, func(e *encoder, v *struct {
		Error turnFailure `json:"error"`
	}) {
		e.turnError(v.Error.Message, v.Error.Ref)
	})
}

func TestCodecDecodesEveryMember(t *testing.T) {
	checkDecodeAll(t, func(d *decoder, v *[]api.Media) { *v = d.media() })
	checkDecodeAll(t, func(d *decoder, v *api.ContentBlock) { d.block(v) })
	checkDecodeAll(t, func(d *decoder, v *api.Message) { d.message(v) })
	checkDecodeAll(t, func(d *decoder, v *[]api.Message) { *v = d.messages() })
	checkDecodeAll(t, func(d *decoder, v *api.Event) { d.event(v) })
	checkDecodeAll(t, func(d *decoder, v *api.TurnInput) { d.turnInput(v) })
	checkDecodeAll(t, func(d *decoder, v *api.ModelResult) { d.modelResult(v) })
	checkDecodeAll(t, func(d *decoder, v *[]api.ToolReturn) { *v = d.toolReturns() })
	checkDecodeAll(t, func(d *decoder, v *api.EventPage) { d.eventPage(v) })
	checkDecodeAll(t, func(d *decoder, v *api.KVReadResult) { v.Value = d.kvReadResult() })
	checkDecodeAll(t, func(d *decoder, v *api.ToolCallEnded) { d.toolCallEnded(v) })
	checkDecodeAll(t, func(d *decoder, v *HostError) { d.hostError(v) })
	checkDecodeAll(t, func(d *decoder, v *Configuration) { d.configuration(v) })
}

// TestFillerSetsEveryMember checks the filler itself: a member it left
// zero would hide a member the codec drops.
func TestFillerSetsEveryMember(t *testing.T) {
	var zero func(v reflect.Value, path string)
	zero = func(v reflect.Value, path string) {
		if v.IsZero() {
			t.Errorf("%s is zero", path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			zero(v.Elem(), path)
		case reflect.Struct:
			for i := range v.NumField() {
				if sf := v.Type().Field(i); sf.IsExported() && sf.Tag.Get("json") != "-" {
					zero(v.Field(i), path+"."+sf.Name)
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Uint8 {
				for i := range v.Len() {
					zero(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
				}
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				zero(it.Value(), path+"["+it.Key().String()+"]")
			}
		}
	}
	for _, v := range []any{filled[api.TurnInput](t), filled[api.ModelRequest](t), filled[api.ModelResult](t), filled[api.ToolCallEnded](t)} {
		zero(reflect.ValueOf(v), reflect.TypeOf(v).String())
	}
	if s := filled[api.Media](t).Type; !strings.Contains(s, "Type") {
		t.Errorf("filled string %q does not name its member", s)
	}
}
