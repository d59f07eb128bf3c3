package envsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// maxAnswerErrorLen bounds the message of a refused answer: 64 quoted
// characters of it (each at most 10 bytes quoted) and the decoder's words.
const maxAnswerErrorLen = 1200

// FuzzCallbackAnswers feeds any bytes to the decoders of Brain's answers
// to callback and reporter calls. Never a panic; a refused answer is an
// *answerError of bounded length; what is accepted is what the method
// answers (a positive sequence, one ToolReturn per call in call order, a
// JSON value) and answers the same when encoded again.
func FuzzCallbackAnswers(f *testing.F) {
	for _, s := range []string{
		`7`, " 12\n", `007`, `0`, `-1`, `1e3`, `18446744073709551616`, `null`, `{}`, `{"value":null}`,
		`{"value":{"a":1}}`, `{"value":{"&":"<>"}}`, `{"sequence":3}`, `{"Sequence":3}`, `{"sequence":0}`, `[]`,
		`[{"call_id":"a","sequence":1,"events":[],"finished":true},{"call_id":"b","sequence":2,"events":[{"x":1}],"finished":false}]`,
		`[{"call_id":"b","sequence":1},{"call_id":"a","sequence":2}]`, "\"\xff\"", ``,
	} {
		for which := range uint8(5) {
			f.Add(which, []byte(s))
		}
	}
	calls := []envapi.ToolInvocation{{CallID: "a", Name: "t"}, {CallID: "b", Name: "t"}}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		switch which % 5 {
		case 0:
			n, err := parseSequence(envapi.MethodEmit, raw)
			if refused(t, raw, err) {
				return
			}
			if n == 0 || strconv.FormatUint(n, 10) != string(bytes.Trim(raw, " \t\r\n")) {
				t.Fatalf("sequence %q read as %d", raw, n)
			}
		case 1:
			out, err := decodeToolReturns(raw, calls)
			if refused(t, raw, err) {
				return
			}
			if len(out) != len(calls) {
				t.Fatalf("dispatch answer %q read as %d returns for %d calls", raw, len(out), len(calls))
			}
			for i, r := range out {
				if r.CallID != calls[i].CallID || r.Sequence == 0 {
					t.Fatalf("dispatch answer %q: return %d is %+v", raw, i, r)
				}
			}
			again, err := json.Marshal(out)
			if err != nil {
				t.Fatalf("dispatch answer %q read as %+v, which does not encode: %v", raw, out, err)
			}
			back, err := decodeToolReturns(again, calls)
			if err != nil || !reflect.DeepEqual(compactReturns(t, back), compactReturns(t, out)) {
				t.Fatalf("dispatch answer %q encoded again as %s reads as %+v, %v", raw, again, back, err)
			}
		case 2:
			v, found, err := decodeKVRead(raw)
			if refused(t, raw, err) {
				return
			}
			again := []byte(`{}`)
			if found {
				if !json.Valid(v) {
					t.Fatalf("kv_read answer %q read as value %q", raw, v)
				}
				again, _ = json.Marshal(map[string]json.RawMessage{"value": v})
			}
			v2, found2, err := decodeKVRead(again)
			if err != nil || found2 != found || (found && !bytes.Equal(canonical(t, v2), canonical(t, v))) {
				t.Fatalf("kv_read answer %q encoded again as %s reads as %q, %v, %v", raw, again, v2, found2, err)
			}
		case 3:
			n, err := decodeReporterAnswer(raw)
			if refused(t, raw, err) {
				return
			}
			again, _ := json.Marshal(map[string]uint64{"sequence": n})
			if n2, err := decodeReporterAnswer(again); n == 0 || err != nil || n2 != n {
				t.Fatalf("reporter answer %q read as %d; encoded again as %s reads as %d, %v", raw, n, again, n2, err)
			}
		case 4:
			v, err := checkJSON(envapi.MethodModel, raw)
			if refused(t, raw, err) {
				return
			}
			if !json.Valid(v) || !utf8.Valid(v) || !bytes.Equal(v, raw) {
				t.Fatalf("model answer %q taken as %q", raw, v)
			}
		}
	})
}

// refused reports whether err refuses raw, failing unless it is an
// *answerError of bounded length.
func refused(t *testing.T, raw []byte, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var ae *answerError
	if !errors.As(err, &ae) || len(err.Error()) > maxAnswerErrorLen || !utf8.ValidString(err.Error()) {
		t.Fatalf("answer %q refused with %T of %d bytes: %.300q", raw, err, len(err.Error()), err.Error())
	}
	return true
}

// canonical answers the JSON value v as the encoder writes it without
// HTML escaping, so that a value read back after json.Marshal (which
// writes "&" as "\u0026") compares equal to the one first read.
func canonical(t *testing.T, v json.RawMessage) json.RawMessage {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		t.Fatalf("value %q: %v", v, err)
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(x); err != nil {
		t.Fatalf("value %q: %v", v, err)
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes()))
}

func compactReturns(t *testing.T, rs []envapi.ToolReturn) []envapi.ToolReturn {
	t.Helper()
	out := make([]envapi.ToolReturn, len(rs))
	for i, r := range rs {
		out[i] = r
		if r.Events != nil {
			out[i].Events = make([]json.RawMessage, len(r.Events))
			for j, e := range r.Events {
				out[i].Events[j] = canonical(t, e)
			}
		}
	}
	return out
}
